package bundle

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ftk-dev/ftk/atomicfile"
)

// Schema metadata keys of a bundle.
const (
	metaFormat        = "ftk.format"
	metaSchemaVersion = "ftk.schema_version"
	metaBundle        = "ftk.bundle"         // Meta as JSON
	metaContentSHA256 = "ftk.content_sha256" // see contentHash
)

// Node table columns. One row per tree node; a record batch per predictor.
const (
	colPredictor = "predictor" // index into Meta.Predictors
	colTree      = "tree"
	colNode      = "node"      // index within the tree; 0 is the root
	colFeature   = "feature"   // index into forest_features; -1 for a leaf
	colThreshold = "threshold" // x[feature] <= threshold goes left; null for a leaf
	colLeft      = "left"      // node index of the left child; null for a leaf
	colRight     = "right"     // node index of the right child; null for a leaf
	colValue     = "value"     // leaf value (in the predictor's target); null inside
)

func nodeSchema(md arrow.Metadata) *arrow.Schema {
	i32 := func(n string, null bool) arrow.Field {
		return arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32, Nullable: null}
	}
	f64 := func(n string) arrow.Field {
		return arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Float64, Nullable: true}
	}
	return arrow.NewSchema([]arrow.Field{
		i32(colPredictor, false), i32(colTree, false), i32(colNode, false), i32(colFeature, false),
		f64(colThreshold), i32(colLeft, true), i32(colRight, true), f64(colValue),
	}, &md)
}

// contentHash is the sha256 over the metadata JSON and every node, in
// order: it detects any change to the file's content after fit wrote it.
func contentHash(metaJSON []byte, forests []*Forest) string {
	h := sha256.New()
	h.Write(metaJSON)
	var buf [20]byte
	for _, f := range forests {
		binary.LittleEndian.PutUint32(buf[:4], uint32(len(f.Roots)))
		h.Write(buf[:4])
		for _, r := range f.Roots {
			binary.LittleEndian.PutUint32(buf[:4], uint32(r))
			h.Write(buf[:4])
		}
		for _, n := range f.Nodes {
			binary.LittleEndian.PutUint64(buf[0:8], math.Float64bits(n.Thr))
			binary.LittleEndian.PutUint32(buf[8:12], uint32(n.Feat))
			binary.LittleEndian.PutUint32(buf[12:16], uint32(n.Left))
			h.Write(buf[:16])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Write stores the bundle at path as one Arrow IPC file. It writes a
// temporary file in the same directory and renames it, so path never holds
// a half-written bundle.
func (b *Bundle) Write(path string) error {
	err := atomicfile.Write(path, func(w *bufio.Writer) error { return b.Encode(w) })
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}

// Encode writes the bundle as an Arrow IPC file.
func (b *Bundle) Encode(out io.Writer) error {
	metaJSON, err := json.Marshal(&b.meta)
	if err != nil {
		return err
	}
	md := arrow.NewMetadata(
		[]string{metaFormat, metaSchemaVersion, metaBundle, metaContentSHA256},
		[]string{Format, strconv.Itoa(b.meta.SchemaVersion), string(metaJSON), contentHash(metaJSON, b.forests)},
	)
	schema := nodeSchema(md)
	mem := memory.NewGoAllocator()
	w, err := ipc.NewFileWriter(out, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for pi, f := range b.forests {
		appendNodes(rb, int32(pi), f)
		rec := rb.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return w.Close()
}

// appendNodes adds the node rows of one forest, with node indices local to
// their tree.
func appendNodes(rb *array.RecordBuilder, pi int32, f *Forest) {
	pred := rb.Field(0).(*array.Int32Builder)
	tree := rb.Field(1).(*array.Int32Builder)
	nodeB := rb.Field(2).(*array.Int32Builder)
	feat := rb.Field(3).(*array.Int32Builder)
	thr := rb.Field(4).(*array.Float64Builder)
	left := rb.Field(5).(*array.Int32Builder)
	right := rb.Field(6).(*array.Int32Builder)
	val := rb.Field(7).(*array.Float64Builder)
	for t, root := range f.Roots {
		end := int32(len(f.Nodes))
		if t+1 < len(f.Roots) {
			end = f.Roots[t+1]
		}
		for i := root; i < end; i++ {
			n := f.Nodes[i]
			pred.Append(pi)
			tree.Append(int32(t))
			nodeB.Append(i - root)
			feat.Append(n.Feat)
			if n.Feat < 0 {
				thr.AppendNull()
				left.AppendNull()
				right.AppendNull()
				val.Append(n.Thr)
				continue
			}
			thr.Append(n.Thr)
			left.Append(n.Left - root)
			right.Append(n.Left + 1 - root)
			val.AppendNull()
		}
	}
}

// Load reads a bundle written by Write. It refuses a file that is
// not an ftk bundle, has another schema version, or whose content does not
// match its checksum.
func Load(path string) (*Bundle, error) {
	data, release, err := readBundleFile(path)
	if err != nil {
		return nil, fmt.Errorf("load bundle: %w", err)
	}
	// decodeBundle copies everything it keeps out of data.
	defer release()
	b, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", path, err)
	}
	return b, nil
}

// errCorrupt wraps every structural problem of a bundle file.
var errCorrupt = errors.New("corrupted bundle")

// Decode reads bundle file bytes; the node columns are read in
// place, without copies. A malformed file the Arrow reader panics on is
// reported as corrupted.
func Decode(data []byte) (b *Bundle, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("malformed Arrow data (%v): %w", p, errCorrupt)
		}
	}()
	r, err := ipc.NewMappedFileReader(data, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return nil, fmt.Errorf("not an Arrow IPC file (%v): %w", err, errCorrupt)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	if f, _ := md.GetValue(metaFormat); f != Format {
		return nil, fmt.Errorf("not an ftk model bundle (schema metadata %s is %q)", metaFormat, f)
	}
	if v, _ := md.GetValue(metaSchemaVersion); v != strconv.Itoa(SchemaVersion) {
		return nil, fmt.Errorf("bundle schema version %s, this ftk reads version %d: refit it with this ftk (ftk fit)", v, SchemaVersion)
	}
	metaJSON, _ := md.GetValue(metaBundle)
	var meta Meta
	if err := json.Unmarshal([]byte(metaJSON), &meta); err != nil {
		return nil, fmt.Errorf("metadata %s: %v: %w", metaBundle, err, errCorrupt)
	}
	if meta.SchemaVersion != SchemaVersion || meta.Format != Format {
		return nil, fmt.Errorf("metadata says format %q version %d: %w", meta.Format, meta.SchemaVersion, errCorrupt)
	}
	forests := make([]*Forest, len(meta.Predictors))
	for i := range forests {
		forests[i] = &Forest{NFeat: len(meta.Predictors[i].ForestFeatures)}
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return nil, fmt.Errorf("record batch %d: %v: %w", i, err, errCorrupt)
		}
		if err := readNodes(rec, forests); err != nil {
			return nil, fmt.Errorf("record batch %d: %w", i, err)
		}
	}
	want, _ := md.GetValue(metaContentSHA256)
	if got := contentHash([]byte(metaJSON), forests); got != want {
		return nil, fmt.Errorf("content checksum %s does not match the recorded %s (the file was modified or damaged): %w", got, want, errCorrupt)
	}
	b = &Bundle{meta: meta}
	ms := make([]*Model, len(forests))
	for i, f := range forests {
		pm := &b.meta.Predictors[i]
		m, err := restoreModel(pm, f)
		if err != nil {
			return nil, fmt.Errorf("predictor %s: %w", pm.Key, err)
		}
		ms[i] = m
	}
	b.index(ms)
	return b, nil
}

// readNodes appends the nodes of one record batch to their forests,
// checking every reference.
func readNodes(rec arrow.RecordBatch, forests []*Forest) error {
	if rec.NumCols() != 8 {
		return fmt.Errorf("%d columns, want 8: %w", rec.NumCols(), errCorrupt)
	}
	cols := make([]arrow.Array, 8)
	for i, name := range []string{colPredictor, colTree, colNode, colFeature, colThreshold, colLeft, colRight, colValue} {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return fmt.Errorf("no column %q: %w", name, errCorrupt)
		}
		cols[i] = rec.Column(idx[0])
	}
	i32 := func(c int) (*array.Int32, error) {
		a, ok := cols[c].(*array.Int32)
		if !ok {
			return nil, fmt.Errorf("column %d is %s, want int32: %w", c, cols[c].DataType(), errCorrupt)
		}
		return a, nil
	}
	f64 := func(c int) (*array.Float64, error) {
		a, ok := cols[c].(*array.Float64)
		if !ok {
			return nil, fmt.Errorf("column %d is %s, want float64: %w", c, cols[c].DataType(), errCorrupt)
		}
		return a, nil
	}
	pred, e1 := i32(0)
	tree, e2 := i32(1)
	nodeA, e3 := i32(2)
	feat, e4 := i32(3)
	thr, e5 := f64(4)
	left, e6 := i32(5)
	right, e7 := i32(6)
	val, e8 := f64(7)
	if err := errors.Join(e1, e2, e3, e4, e5, e6, e7, e8); err != nil {
		return err
	}
	preds, trees, nodes, feats := pred.Int32Values(), tree.Int32Values(), nodeA.Int32Values(), feat.Int32Values()
	thrs, lefts, rights, vals := thr.Float64Values(), left.Int32Values(), right.Int32Values(), val.Float64Values()
	if len(preds) > 0 {
		if pi := int(preds[0]); pi >= 0 && pi < len(forests) {
			forests[pi].Nodes = slices.Grow(forests[pi].Nodes, len(preds))
		}
	}
	for i := range preds {
		pi := int(preds[i])
		if pi < 0 || pi >= len(forests) {
			return fmt.Errorf("row %d: predictor %d of %d: %w", i, pi, len(forests), errCorrupt)
		}
		f := forests[pi]
		t, n := int(trees[i]), nodes[i]
		if n == 0 {
			if t != len(f.Roots) {
				return fmt.Errorf("row %d: tree %d of predictor %d out of order: %w", i, t, pi, errCorrupt)
			}
			f.Roots = append(f.Roots, int32(len(f.Nodes)))
		}
		if len(f.Roots) == 0 || t != len(f.Roots)-1 || int(n) != len(f.Nodes)-int(f.Roots[t]) {
			return fmt.Errorf("row %d: node %d of tree %d of predictor %d out of order: %w", i, n, t, pi, errCorrupt)
		}
		root := f.Roots[t]
		fi := feats[i]
		if fi < 0 {
			if val.IsNull(i) {
				return fmt.Errorf("row %d: leaf without a value: %w", i, errCorrupt)
			}
			f.Nodes = append(f.Nodes, Node{Thr: vals[i], Feat: -1})
			continue
		}
		if int(fi) >= f.NFeat || thr.IsNull(i) || left.IsNull(i) || right.IsNull(i) || rights[i] != lefts[i]+1 || lefts[i] <= n {
			return fmt.Errorf("row %d: inner node %d of tree %d of predictor %d is malformed: %w", i, n, t, pi, errCorrupt)
		}
		f.Nodes = append(f.Nodes, Node{Thr: thrs[i], Feat: fi, Left: root + lefts[i]})
	}
	return nil
}

// restoreModel rebuilds a predictor's model from its metadata and forest.
func restoreModel(pm *PredictorMeta, f *Forest) (*Model, error) {
	if len(f.Roots) == 0 {
		return nil, fmt.Errorf("no trees: %w", errCorrupt)
	}
	// Every child must exist.
	for t, root := range f.Roots {
		end := int32(len(f.Nodes))
		if t+1 < len(f.Roots) {
			end = f.Roots[t+1]
		}
		for i := root; i < end; i++ {
			if n := f.Nodes[i]; n.Feat >= 0 && n.Left+1 >= end {
				return nil, fmt.Errorf("tree %d node %d points past its tree: %w", t, i-root, errCorrupt)
			}
		}
	}
	fs := ForestFeatures(pm.Key.Op)
	if !slices.Equal(fs.names, pm.ForestFeatures) {
		return nil, fmt.Errorf("forest features %v, this ftk computes %v for %s: refit the bundle", pm.ForestFeatures, fs.names, pm.Key.Op)
	}
	switch pm.Target {
	case TargetLogRatio, TargetLog, TargetRaw, TargetZero:
	default:
		return nil, fmt.Errorf("unknown target %q: %w", pm.Target, errCorrupt)
	}
	switch pm.Extrapolation {
	case "", ExtrapolateFallback, ExtrapolateEdge, ExtrapolateEdgeAbove, ExtrapolateEdgeBelow, ExtrapolateRoof:
	default:
		return nil, fmt.Errorf("unknown extrapolation %q: %w", pm.Extrapolation, errCorrupt)
	}
	fb := pm.Fallback
	switch {
	case fb.Basis == BasisWork && fb.Op == nil,
		fb.Basis != BasisWork && fb.Basis != BasisRaw,
		fb.Basis == BasisWork && len(fb.Coef) != 3,
		fb.Basis == BasisRaw && len(fb.Coef) != 1+len(pm.Features):
		return nil, fmt.Errorf("fallback basis %q with %d coefficients: %w", fb.Basis, len(fb.Coef), errCorrupt)
	}
	if len(pm.Domain) != len(pm.Features) || len(pm.Features) > MaxFeatures {
		return nil, fmt.Errorf("%d domain ranges for %d features: %w", len(pm.Domain), len(pm.Features), errCorrupt)
	}
	m := &Model{target: pm.Target, fb: &pm.Fallback, floorMs: pm.FloorMs, feats: fs, f: f}
	if pm.Target == TargetZero && len(pm.Measured) > 0 {
		return nil, fmt.Errorf("a predictor of 0 ms with %d measured shapes: %w", len(pm.Measured), errCorrupt)
	}
	m, err := m.WithMeasured(pm.Measured, len(pm.Features))
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, errCorrupt)
	}
	return m, nil
}
