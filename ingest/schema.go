package ingest

import (
	"encoding/json"
	"math"
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
func fileSchema(f *outFile, device string) *arrow.Schema {
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
	for _, r := range f.recs {
		if _, ok := opFeats[r.Key.Op]; !ok {
			opFeats[r.Key.Op] = spec.OpFeatures(r.Key.Op)
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

// columnsBuilder makes the columns of one record batch, in schema order.
type columnsBuilder struct {
	mem  memory.Allocator
	recs []*record
	cols []arrow.Array
}

func (c *columnsBuilder) release() {
	for _, a := range c.cols {
		a.Release()
	}
}

// strs adds a dictionary-encoded string column; ok false is null. The
// dictionary holds the values in order of first appearance.
func (c *columnsBuilder) strs(get func(*record) (string, bool)) {
	idx := array.NewInt32Builder(c.mem)
	defer idx.Release()
	idx.Reserve(len(c.recs))
	dict := array.NewStringBuilder(c.mem)
	defer dict.Release()
	seen := map[string]int32{}
	last, lastIdx := "", int32(-1)
	for _, r := range c.recs {
		s, ok := get(r)
		if !ok {
			idx.AppendNull()
			continue
		}
		if lastIdx < 0 || s != last {
			j, found := seen[s]
			if !found {
				j = int32(len(seen))
				seen[s] = j
				dict.Append(s)
			}
			last, lastIdx = s, j
		}
		idx.Append(lastIdx)
	}
	ia, da := idx.NewArray(), dict.NewArray()
	c.cols = append(c.cols, array.NewDictionaryArray(dictString, ia, da))
	ia.Release()
	da.Release()
}

// ids adds a dictionary-encoded string column from strTable ids.
func (c *columnsBuilder) ids(tab *strTable, get func(*record) (int32, bool)) {
	idx := array.NewInt32Builder(c.mem)
	defer idx.Release()
	idx.Reserve(len(c.recs))
	dict := array.NewStringBuilder(c.mem)
	defer dict.Release()
	remap := make([]int32, len(tab.strs))
	n := int32(0)
	for _, r := range c.recs {
		id, ok := get(r)
		if !ok {
			idx.AppendNull()
			continue
		}
		if remap[id] == 0 {
			n++
			remap[id] = n
			dict.Append(tab.strs[id])
		}
		idx.UnsafeAppend(remap[id] - 1)
	}
	ia, da := idx.NewArray(), dict.NewArray()
	c.cols = append(c.cols, array.NewDictionaryArray(dictString, ia, da))
	ia.Release()
	da.Release()
}

func (c *columnsBuilder) str(get func(*record) string) {
	c.strs(func(r *record) (string, bool) { return get(r), true })
}

func (c *columnsBuilder) ints(get func(*record) (int32, bool)) {
	b := array.NewInt32Builder(c.mem)
	defer b.Release()
	b.Reserve(len(c.recs))
	for _, r := range c.recs {
		if v, ok := get(r); ok {
			b.UnsafeAppend(v)
		} else {
			b.AppendNull()
		}
	}
	c.cols = append(c.cols, b.NewArray())
}

func (c *columnsBuilder) int(get func(*record) int) {
	c.ints(func(r *record) (int32, bool) { return int32(get(r)), true })
}

// floats adds a float64 column; NaN is null.
func (c *columnsBuilder) floats(get func(*record) float64) {
	b := array.NewFloat64Builder(c.mem)
	defer b.Release()
	b.Reserve(len(c.recs))
	for _, r := range c.recs {
		if v := get(r); math.IsNaN(v) {
			b.AppendNull()
		} else {
			b.UnsafeAppend(v)
		}
	}
	c.cols = append(c.cols, b.NewArray())
}

func (c *columnsBuilder) bools(get func(*record) (bool, bool)) {
	b := array.NewBooleanBuilder(c.mem)
	defer b.Release()
	b.Reserve(len(c.recs))
	for _, r := range c.recs {
		if v, ok := get(r); ok {
			b.UnsafeAppend(v)
		} else {
			b.AppendNull()
		}
	}
	c.cols = append(c.cols, b.NewArray())
}

// buildRecord makes the record batch of one file's samples.
func buildRecord(f *outFile, schema *arrow.Schema, tab *strTable) arrow.RecordBatch {
	c := &columnsBuilder{mem: memory.NewGoAllocator(), recs: f.recs}
	defer c.release()
	c.str(func(r *record) string { return r.Key.Op })
	c.str(func(r *record) string { return r.Key.Measurement })
	c.str(func(r *record) string { return r.Device })
	c.str(func(r *record) string { return r.Model })
	c.int(func(r *record) int { return r.Key.TP })
	c.int(func(r *record) int { return r.Key.EP })
	c.int(func(r *record) int { return r.Key.LocalExperts })
	c.str(func(r *record) string { return r.Key.GatingContext })
	c.str(func(r *record) string { return r.Key.RoutingPath })
	c.int(func(r *record) int { return r.Key.Workers })
	c.str(func(r *record) string { return r.Variant })
	if f.family == spec.FamilyAttention {
		c.str(func(r *record) string { return r.phase })
	}
	// pos[op][k] is the index in the op's features of feature column k,
	// or -1.
	cols := familyFeatures[f.family]
	pos := map[string][]int{}
	for _, r := range f.recs {
		if _, ok := pos[r.Key.Op]; ok {
			continue
		}
		p := make([]int, len(cols))
		for k, name := range cols {
			p[k] = slices.Index(spec.OpFeatures(r.Key.Op), name)
		}
		pos[r.Key.Op] = p
	}
	for k := range cols {
		lastOp, lastPos := "", []int(nil)
		c.floats(func(r *record) float64 {
			if lastPos == nil || r.Key.Op != lastOp {
				lastOp, lastPos = r.Key.Op, pos[r.Key.Op]
			}
			if j := lastPos[k]; j >= 0 {
				return r.Features[j]
			}
			return math.NaN()
		})
	}
	c.floats(func(r *record) float64 { return r.MedianMs })
	c.floats(func(r *record) float64 { return r.MeanMs })
	c.floats(func(r *record) float64 { return r.MinMs })
	c.floats(func(r *record) float64 { return r.MaxMs })
	c.floats(func(r *record) float64 { return r.StdMs })
	c.int(func(r *record) int { return r.Count })
	c.bools(func(r *record) (bool, bool) { return r.Conflict, true })
	for j, e := range familyExtras(f.family) {
		switch e.kind {
		case kindString:
			c.ids(tab, func(r *record) (int32, bool) { v := r.extras[j]; return v.id, v.ok })
		case kindInt:
			c.ints(func(r *record) (int32, bool) { v := r.extras[j]; return int32(v.f), v.ok })
		case kindFloat:
			c.floats(func(r *record) float64 {
				if v := r.extras[j]; v.ok {
					return v.f
				}
				return math.NaN()
			})
		case kindBool:
			c.bools(func(r *record) (bool, bool) { v := r.extras[j]; return v.f != 0, v.ok })
		}
	}
	c.str(func(r *record) string { return r.Source })
	c.int(func(r *record) int { return r.Line })
	return array.NewRecordBatch(schema, c.cols, int64(len(f.recs)))
}
