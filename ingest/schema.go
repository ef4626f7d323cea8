package ingest

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// dictString is the type of every string column: dictionary-encoded, as
// their values repeat (operator, model, source path, ...). It is the type
// fileSchema gives; the written file's index type is the narrowest that
// numbers the column's dictionary (int8, int16 or int32), and an extra
// column whose cells are all blank or absent is of type null.
var dictString = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// fileSchema is the Arrow schema of one output file, with the generic
// column types: buildRecord gives the written schema its columns' types
// (see dictString).
func fileSchema(f *outFile, device string, tab *strTable) *arrow.Schema {
	str := func(n string) arrow.Field { return arrow.Field{Name: n, Type: dictString} }
	i32 := func(n string) arrow.Field { return arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32} }
	f64 := func(n string, null bool) arrow.Field {
		return arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Float64, Nullable: null}
	}
	fields := []arrow.Field{
		str(dataset.ColOp), str(dataset.ColMeasurement), str(dataset.ColDevice), str(dataset.ColModel),
		i32(dataset.ColTP), i32(dataset.ColEP), i32(dataset.ColLocalExperts), str(dataset.ColGatingContext), str(dataset.ColRoutingPath), i32(dataset.ColWorkers),
		{Name: dataset.ColCrossNode, Type: arrow.FixedWidthTypes.Boolean}, str(dataset.ColVariant),
	}
	if f.family == spec.FamilyAttention {
		fields = append(fields, str(dataset.ColPhase))
	}
	for _, n := range dataset.FamilyFeatures[f.family] {
		fields = append(fields, f64(n, true))
	}
	fields = append(fields, f64(dataset.ColMedian, false), f64(dataset.ColMean, false), f64(dataset.ColMin, true), f64(dataset.ColMax, true), f64(dataset.ColStd, true),
		i32(dataset.ColCount), arrow.Field{Name: dataset.ColConflict, Type: arrow.FixedWidthTypes.Boolean}, str(dataset.ColKernelSource))
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
	fields = append(fields, str(dataset.ColSource), i32(dataset.ColLine))

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
		dataset.MetaKind:          dataset.ManifestKind,
		dataset.MetaSchemaVersion: strconv.Itoa(dataset.SchemaVersion),
		dataset.MetaFamily:        string(f.family),
		dataset.MetaMeasurement:   f.measurement,
		dataset.MetaDevice:        device,
		dataset.MetaOpFeatures:    string(of),
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

// buildRecord makes the record batch of one file's samples.
func buildRecord(f *outFile, schema *arrow.Schema, b *build) arrow.RecordBatch {
	n := len(f.recs)
	tab, inputs := b.tab, b.m.Inputs
	op, meas, model, gctx, rpath, kernel := newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab), newIDCol(n, tab)
	device, variant, phase, source := newRunCol(n), newRunCol(n), newRunCol(n), newRunCol(n)
	tp, ep, local, workers, count, line := newIntCol(n), newIntCol(n), newIntCol(n), newIntCol(n), newIntCol(n), newIntCol(n)
	median, mean, mn, mx, std := newFloatCol(n), newFloatCol(n), newFloatCol(n), newFloatCol(n), newFloatCol(n)
	conflict, cross := newBoolCol(n), newBoolCol(n)
	featNames := dataset.FamilyFeatures[f.family]
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
		cross.set(i, r.cross, true)
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
		kernel.set(i, r.kernel, true)
		source.set(i, inputs[r.in].Path)
		line.set(i, r.line, true)
	}
	arrs := []arrow.Array{op.array(), meas.array(), device.array(), model.array(),
		tp.array(), ep.array(), local.array(), gctx.array(), rpath.array(), workers.array(), cross.array(), variant.array()}
	if f.family == spec.FamilyAttention {
		arrs = append(arrs, phase.array())
	}
	for _, c := range feats {
		arrs = append(arrs, c.array())
	}
	arrs = append(arrs, median.array(), mean.array(), mn.array(), mx.array(), std.array(), count.array(), conflict.array(), kernel.array())
	arrs = append(arrs, extraArrays(f, b)...)
	arrs = append(arrs, source.array(), line.array())
	// The schema takes the columns' types: the dictionary index width
	// follows each dictionary's size, and absent extras are null columns.
	fields := schema.Fields()
	for i, a := range arrs {
		fields[i].Type = a.DataType()
	}
	md := schema.Metadata()
	schema = arrow.NewSchema(fields, &md)
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// extraArrays makes the columns of a file's extras in one pass over the
// records (whose extras lie scattered in the inputs' slabs). An extra that
// no input has (the column is absent, or every cell is blank) is a column
// of type null, without buffers.
func extraArrays(f *outFile, b *build) []arrow.Array {
	n := len(f.recs)
	extras := familyExtras(f.family)
	type col[T any] struct {
		j int
		c T
	}
	var (
		ids    []col[*idCol]
		ints   []col[*intCol]
		floats []col[*floatCol]
		bools  []col[*boolCol]
	)
	for j, e := range extras {
		some := false
		for _, in := range f.inputs {
			some = some || b.xseen[in][j]
		}
		if !some {
			continue
		}
		switch e.kind {
		case kindString:
			ids = append(ids, col[*idCol]{j, newIDCol(n, b.tab)})
		case kindInt:
			ints = append(ints, col[*intCol]{j, newIntCol(n)})
		case kindFloat:
			floats = append(floats, col[*floatCol]{j, newFloatCol(n)})
		case kindBool:
			bools = append(bools, col[*boolCol]{j, newBoolCol(n)})
		}
	}
	none := make([]xval, len(extras))
	for i, r := range f.recs {
		row := none
		if r.ext >= 0 {
			row = b.ext[r.in][r.ext : int(r.ext)+len(extras)]
		}
		for _, c := range ids {
			v := row[c.j]
			c.c.set(i, v.id(), v.ok())
		}
		for _, c := range ints {
			if v := row[c.j]; v.ok() {
				c.c.set(i, int32(v.num()), true)
			} else {
				c.c.null(i)
			}
		}
		for _, c := range floats {
			if v := row[c.j]; v.ok() {
				c.c.set(i, v.num())
			} else {
				c.c.null(i)
			}
		}
		for _, c := range bools {
			v := row[c.j]
			c.c.set(i, v.num() != 0, v.ok())
		}
	}
	arrs := make([]arrow.Array, len(extras))
	for _, c := range ids {
		arrs[c.j] = c.c.array()
	}
	for _, c := range ints {
		arrs[c.j] = c.c.array()
	}
	for _, c := range floats {
		arrs[c.j] = c.c.array()
	}
	for _, c := range bools {
		arrs[c.j] = c.c.array()
	}
	for j, a := range arrs {
		if a == nil {
			arrs[j] = array.NewNull(n)
		}
	}
	return arrs
}
