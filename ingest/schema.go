package ingest

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ftk-dev/ftk/spec"
)

// Schema metadata keys of a dataset's Arrow files.
const (
	metaKind          = "ftk.kind"
	metaSchemaVersion = "ftk.schema_version"
	metaFamily        = "ftk.family"
	metaMeasurement   = "ftk.measurement_type"
	metaDevice        = "ftk.device"
	metaOpFeatures    = "ftk.op_features" // JSON: operator -> feature columns
)

// familyFeatures are the feature columns of each family's file: the union
// of spec.OpFeatures of its operators. A sample fills the columns of its
// operator's features; the others are null.
var familyFeatures = map[spec.Family][]string{
	spec.FamilyLinear:     {spec.FeatNumTokens},
	spec.FamilyAttention:  {spec.FeatNumTokens, spec.FeatBatchSize, spec.FeatKVCacheSize, spec.FeatPrefillChunkSize},
	spec.FamilyMoE:        {spec.FeatNumTokens, spec.FeatTotalRoutedTokens, spec.FeatMaxExpertTokens},
	spec.FamilyCollective: {spec.FeatSizeBytes},
	spec.FamilyCPU:        {spec.FeatBatchSize, spec.FeatNumPrefillTokens, spec.FeatNumDecodeTokens},
}

// Column names of the canonical long schema (besides features and extras).
const (
	colOp            = "op"
	colMeasurement   = "measurement_type"
	colDevice        = "device"
	colModel         = "model"
	colTP            = "tp"
	colEP            = "ep"
	colLocalExperts  = "local_experts"
	colGatingContext = "gating_context"
	colRoutingPath   = "routing_path"
	colWorkers       = "workers"
	colVariant       = "variant"
	colPhase         = "phase"
	colMedian        = "median_ms"
	colMean          = "mean_ms"
	colMin           = "min_ms"
	colMax           = "max_ms"
	colStd           = "std_ms"
	colCount         = "count"
	colConflict      = "conflict"
	colSource        = "source"
	colLine          = "line"
)

// dictString is the type of every string column: dictionary-encoded, as
// their values repeat (operator, model, source path, ...).
var dictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// fileSchema is the Arrow schema of one output file.
func fileSchema(f *outFile, device string, tab *strTable) *arrow.Schema {
	str := func(n string) arrow.Field { return arrow.Field{Name: n, Type: dictString} }
	i32 := func(n string) arrow.Field { return arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32} }
	f64 := func(n string, null bool) arrow.Field {
		return arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Float64, Nullable: null}
	}
	fields := []arrow.Field{
		str(colOp), str(colMeasurement), str(colDevice), str(colModel),
		i32(colTP), i32(colEP), i32(colLocalExperts), str(colGatingContext), str(colRoutingPath), i32(colWorkers),
		str(colVariant),
	}
	if f.family == spec.FamilyAttention {
		fields = append(fields, str(colPhase))
	}
	for _, n := range familyFeatures[f.family] {
		fields = append(fields, f64(n, true))
	}
	fields = append(fields, f64(colMedian, false), f64(colMean, false), f64(colMin, true), f64(colMax, true), f64(colStd, true),
		i32(colCount), arrow.Field{Name: colConflict, Type: arrow.FixedWidthTypes.Boolean})
	for _, e := range familyExtras(f.family) {
		var t arrow.DataType
		switch e.kind {
		case kindString:
			t = dictString
		case kindInt:
			t = arrow.PrimitiveTypes.Int32
		case kindFloat:
			t = arrow.PrimitiveTypes.Float64
		case kindBool:
			t = arrow.FixedWidthTypes.Boolean
		}
		fields = append(fields, arrow.Field{Name: e.name, Type: t, Nullable: true})
	}
	fields = append(fields, str(colSource), i32(colLine))

	opFeats := map[string][]string{}
	lastOp := int32(-1)
	for _, r := range f.recs {
		if r.op != lastOp {
			lastOp = r.op
			opFeats[tab.strs[r.op]] = spec.OpFeatures(tab.strs[r.op])
		}
	}
	of, _ := json.Marshal(opFeats) // map keys are sorted
	kv := map[string]string{
		metaKind:          ManifestKind,
		metaSchemaVersion: strconv.Itoa(SchemaVersion),
		metaFamily:        string(f.family),
		metaMeasurement:   f.measurement,
		metaDevice:        device,
		metaOpFeatures:    string(of),
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = kv[k]
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(fields, &md)
}

// Columns are filled straight into Go slices, one pass over the sorted
// records, and handed to Arrow as buffers: no builders, no per-cell calls.

// validity is a column's null bitmap, made on the first null.
type validity struct {
	n     int
	bits  []byte
	nulls int
}

func (v *validity) null(i int) {
	if v.bits == nil {
		v.bits = make([]byte, (v.n+7)/8)
		for k := range v.bits {
			v.bits[k] = 0xff
		}
		if r := v.n % 8; r != 0 {
			v.bits[len(v.bits)-1] = byte(1<<r - 1) // bits past the end are zero
		}
	}
	v.bits[i/8] &^= 1 << (i % 8)
	v.nulls++
}

func (v *validity) buffer() *memory.Buffer {
	if v.nulls == 0 {
		return nil
	}
	return memory.NewBufferBytes(v.bits)
}

func makeArray(t arrow.DataType, n int, v *validity, values []byte) arrow.Array {
	d := array.NewData(t, n, []*memory.Buffer{v.buffer(), memory.NewBufferBytes(values)}, nil, v.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

type intCol struct {
	validity
	vals []int32
}

func newIntCol(n int) *intCol { return &intCol{validity{n: n}, make([]int32, n)} }

func (c *intCol) set(i int, v int32, ok bool) {
	if ok {
		c.vals[i] = v
	} else {
		c.null(i)
	}
}

func (c *intCol) array() arrow.Array {
	return makeArray(arrow.PrimitiveTypes.Int32, c.n, &c.validity, arrow.Int32Traits.CastToBytes(c.vals))
}

// floatCol is a float64 column; NaN is null.
type floatCol struct {
	validity
	vals []float64
}

func newFloatCol(n int) *floatCol { return &floatCol{validity{n: n}, make([]float64, n)} }

func (c *floatCol) set(i int, v float64) {
	if v == v {
		c.vals[i] = v
	} else {
		c.null(i)
	}
}

func (c *floatCol) array() arrow.Array {
	return makeArray(arrow.PrimitiveTypes.Float64, c.n, &c.validity, arrow.Float64Traits.CastToBytes(c.vals))
}

type boolCol struct {
	validity
	vals []byte // bitmap
}

func newBoolCol(n int) *boolCol { return &boolCol{validity{n: n}, make([]byte, (n+7)/8)} }

func (c *boolCol) set(i int, v, ok bool) {
	switch {
	case !ok:
		c.null(i)
	case v:
		c.vals[i/8] |= 1 << (i % 8)
	}
}

func (c *boolCol) array() arrow.Array {
	return makeArray(arrow.FixedWidthTypes.Boolean, c.n, &c.validity, c.vals)
}

// dictCol is a dictionary-encoded string column. The dictionary holds the
// values in order of first appearance.
type dictCol struct {
	validity
	idx  []int32
	dict []string
}

func (c *dictCol) array() arrow.Array {
	ia := makeArray(arrow.PrimitiveTypes.Int32, c.n, &c.validity, arrow.Int32Traits.CastToBytes(c.idx))
	defer ia.Release()
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	sb.AppendValues(c.dict, nil)
	da := sb.NewArray()
	defer da.Release()
	return array.NewDictionaryArray(dictString, ia, da)
}

// idCol is a dictionary column of strTable ids.
type idCol struct {
	dictCol
	tab   *strTable
	remap []int32 // table id -> dictionary index + 1
}

func newIDCol(n int, tab *strTable) *idCol {
	return &idCol{dictCol: dictCol{validity: validity{n: n}, idx: make([]int32, n)}, tab: tab, remap: make([]int32, len(tab.strs))}
}

func (c *idCol) set(i int, id int32, ok bool) {
	if !ok {
		c.null(i)
		return
	}
	if c.remap[id] == 0 {
		c.dict = append(c.dict, c.tab.strs[id])
		c.remap[id] = int32(len(c.dict))
	}
	c.idx[i] = c.remap[id] - 1
}

// runCol is a dictionary column of few distinct strings that come in runs.
type runCol struct {
	dictCol
	last    string
	lastIdx int32
}

func newRunCol(n int) *runCol {
	return &runCol{dictCol: dictCol{validity: validity{n: n}, idx: make([]int32, n)}, lastIdx: -1}
}

func (c *runCol) set(i int, s string) {
	if c.lastIdx < 0 || s != c.last {
		j := slices.Index(c.dict, s)
		if j < 0 {
			j = len(c.dict)
			c.dict = append(c.dict, s)
		}
		c.last, c.lastIdx = s, int32(j)
	}
	c.idx[i] = c.lastIdx
}

// buildRecord makes the record batch of one file's samples.
func buildRecord(f *outFile, schema *arrow.Schema, b *build) arrow.RecordBatch {
	n := len(f.recs)
	tab, inputs := b.tab, b.m.Inputs
	op, meas, model, gctx, rpath := newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab)
	device, variant, phase, source := newRunCol(n), newRunCol(n), newRunCol(n), newRunCol(n)
	tp, ep, local, workers, count, line := newIntCol(n), newIntCol(n), newIntCol(n), newIntCol(n), newIntCol(n), newIntCol(n)
	median, mean, mn, mx, std := newFloatCol(n), newFloatCol(n), newFloatCol(n), newFloatCol(n), newFloatCol(n)
	conflict := newBoolCol(n)
	featNames := familyFeatures[f.family]
	feats := make([]*floatCol, len(featNames))
	for k := range feats {
		feats[k] = newFloatCol(n)
	}
	// pos[op id][k] is the index in the op's features of feature column
	// k, or -1.
	pos := map[int32][]int{}
	for _, r := range f.recs {
		if _, ok := pos[r.op]; !ok {
			p := make([]int, len(featNames))
			for k, name := range featNames {
				p[k] = slices.Index(spec.OpFeatures(tab.strs[r.op]), name)
			}
			pos[r.op] = p
		}
	}
	extras := familyExtras(f.family)
	xs := make([]any, len(extras))
	for j, e := range extras {
		switch e.kind {
		case kindString:
			xs[j] = newIDCol(n, tab)
		case kindInt:
			xs[j] = newIntCol(n)
		case kindFloat:
			xs[j] = newFloatCol(n)
		case kindBool:
			xs[j] = newBoolCol(n)
		}
	}
	lastOp, lastPos := int32(-1), []int(nil)
	for i, r := range f.recs {
		op.set(i, r.op, true)
		meas.set(i, r.meas, true)
		device.set(i, inputs[r.in].Device)
		model.set(i, r.model, true)
		tp.set(i, r.tp, true)
		ep.set(i, r.ep, true)
		local.set(i, r.local, true)
		gctx.set(i, r.gctx, true)
		rpath.set(i, r.rpath, true)
		workers.set(i, r.workers, true)
		variant.set(i, variantNames[r.variant])
		phase.set(i, phaseNames[r.phase])
		if r.op != lastOp {
			lastOp, lastPos = r.op, pos[r.op]
		}
		for k, j := range lastPos {
			if j >= 0 {
				feats[k].set(i, r.f[j])
			} else {
				feats[k].null(i)
			}
		}
		median.set(i, r.median)
		mean.set(i, r.mean)
		mn.set(i, r.min)
		mx.set(i, r.max)
		std.set(i, r.std)
		count.set(i, r.count, true)
		conflict.set(i, r.conflict, true)
		var slab []xval
		if r.ext >= 0 {
			slab = b.ext[r.in][r.ext : int(r.ext)+len(extras)]
		}
		for j, x := range xs {
			var v xval
			if slab != nil {
				v = slab[j]
			}
			switch c := x.(type) {
			case *idCol:
				c.set(i, v.id, v.ok)
			case *intCol:
				c.set(i, int32(v.f), v.ok)
			case *floatCol:
				if v.ok {
					c.set(i, v.f)
				} else {
					c.null(i)
				}
			case *boolCol:
				c.set(i, v.f != 0, v.ok)
			}
		}
		source.set(i, inputs[r.in].Path)
		line.set(i, r.line, true)
	}
	arrs := []arrow.Array{op.array(), meas.array(), device.array(), model.array(),
		tp.array(), ep.array(), local.array(), gctx.array(), rpath.array(), workers.array(), variant.array()}
	if f.family == spec.FamilyAttention {
		arrs = append(arrs, phase.array())
	}
	for _, c := range feats {
		arrs = append(arrs, c.array())
	}
	arrs = append(arrs, median.array(), mean.array(), mn.array(), mx.array(), std.array(), count.array(), conflict.array())
	for _, x := range xs {
		arrs = append(arrs, x.(interface{ array() arrow.Array }).array())
	}
	arrs = append(arrs, source.array(), line.array())
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}
