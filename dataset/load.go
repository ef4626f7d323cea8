package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/ftk-dev/ftk/spec"
)

// readManifest reads and checks dir/manifest.json.
func readManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no %s (not an ftk profile dataset, or an interrupted ingest): make one with ftk ingest PROFILES -o %s", dir, ManifestFile, dir)
		}
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m.Kind != ManifestKind {
		return nil, fmt.Errorf("%s: kind %q is not %q", p, m.Kind, ManifestKind)
	}
	if m.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema version %d, this ftk reads version %d (re-run ftk ingest)", p, m.SchemaVersion, SchemaVersion)
	}
	return &m, nil
}

// Load reads a dataset directory written by Ingest. Every Arrow file is
// checked against the sha256 in the manifest.
func Load(dir string) (*Dataset, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("load dataset: %w", err)
	}
	d := &Dataset{Manifest: *m}
	for _, f := range m.Files {
		if !SafeName(f.Name) {
			return nil, fmt.Errorf("load dataset %s: bad file name %q in manifest", dir, f.Name)
		}
		p := filepath.Join(dir, f.Name)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("load dataset: %w", err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			return nil, fmt.Errorf("load dataset: %s: sha256 %s differs from the manifest's %s (file changed after ingest)", p, got, f.SHA256)
		}
		n := len(d.Samples)
		if d.Samples, err = readArrow(data, d.Samples); err != nil {
			return nil, fmt.Errorf("load dataset: %s: %w", p, err)
		}
		if got := len(d.Samples) - n; got != f.Rows {
			return nil, fmt.Errorf("load dataset: %s: %d rows, the manifest says %d", p, got, f.Rows)
		}
	}
	return d, nil
}

// readArrow appends the samples of one Arrow file.
func readArrow(data []byte, out []Sample) ([]Sample, error) {
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	defer r.Close()
	schema := r.Schema()
	if v, _ := schema.Metadata().GetValue(MetaSchemaVersion); v != fmt.Sprint(SchemaVersion) {
		return out, fmt.Errorf("schema version %q, want %d", v, SchemaVersion)
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return out, err
		}
		if out, err = samplesOf(rec, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// columns gives typed access to a record batch's columns by name.
type columns struct {
	rec arrow.RecordBatch
	err error
}

func (c *columns) col(name string) arrow.Array {
	idx := c.rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		if c.err == nil {
			c.err = fmt.Errorf("no column %q", name)
		}
		return nil
	}
	return c.rec.Column(idx[0])
}

// strCol reads a string column, plain or dictionary-encoded.
type strCol interface {
	IsNull(i int) bool
	Value(i int) string
}

// dictStrings reads a dictionary-encoded string column.
type dictStrings struct {
	*array.Dictionary
	values *array.String
}

func (d dictStrings) Value(i int) string { return d.values.Value(d.GetValueIndex(i)) }

func (c *columns) str(name string) strCol {
	switch a := c.col(name).(type) {
	case *array.String:
		return a
	case *array.Dictionary:
		if v, ok := a.Dictionary().(*array.String); ok {
			return dictStrings{a, v}
		}
	}
	if c.err == nil {
		c.err = fmt.Errorf("column %q is not a string column", name)
	}
	return nil
}

func (c *columns) i32(name string) *array.Int32 {
	a, ok := c.col(name).(*array.Int32)
	if !ok && c.err == nil {
		c.err = fmt.Errorf("column %q is not an int32 column", name)
	}
	return a
}

func (c *columns) boolean(name string) *array.Boolean {
	a, ok := c.col(name).(*array.Boolean)
	if !ok && c.err == nil {
		c.err = fmt.Errorf("column %q is not a boolean column", name)
	}
	return a
}

func (c *columns) f64(name string) *array.Float64 {
	a, ok := c.col(name).(*array.Float64)
	if !ok && c.err == nil {
		c.err = fmt.Errorf("column %q is not a float64 column", name)
	}
	return a
}

// samplesOf converts one record batch to samples.
func samplesOf(rec arrow.RecordBatch, out []Sample) ([]Sample, error) {
	c := &columns{rec: rec}
	op, meas, dev, model := c.str(ColOp), c.str(ColMeasurement), c.str(ColDevice), c.str(ColModel)
	tp, ep, local, workers := c.i32(ColTP), c.i32(ColEP), c.i32(ColLocalExperts), c.i32(ColWorkers)
	gctx, path, variant := c.str(ColGatingContext), c.str(ColRoutingPath), c.str(ColVariant)
	med, mean, mn, mx, std := c.f64(ColMedian), c.f64(ColMean), c.f64(ColMin), c.f64(ColMax), c.f64(ColStd)
	count, src, line := c.i32(ColCount), c.str(ColSource), c.i32(ColLine)
	conflict, cross := c.boolean(ColConflict), c.boolean(ColCrossNode)
	kernel := c.str(ColKernelSource)
	if c.err != nil {
		return out, c.err
	}
	feats := map[string]*array.Float64{}
	f64 := func(a *array.Float64, i int) float64 {
		if a.IsNull(i) {
			return math.NaN()
		}
		return a.Value(i)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		s := Sample{
			Key: spec.OpKey{Op: op.Value(i), Measurement: meas.Value(i), TP: int(tp.Value(i)), EP: int(ep.Value(i)),
				LocalExperts: int(local.Value(i)), GatingContext: gctx.Value(i), RoutingPath: path.Value(i), Workers: int(workers.Value(i)),
				CrossNode: cross.Value(i)},
			MedianMs: med.Value(i), MeanMs: mean.Value(i), MinMs: f64(mn, i), MaxMs: f64(mx, i), StdMs: f64(std, i),
			Count: int(count.Value(i)), Device: dev.Value(i), Model: model.Value(i),
			Source: src.Value(i), Line: int(line.Value(i)), Variant: variant.Value(i), Conflict: conflict.Value(i),
			KernelSource: kernel.Value(i),
		}
		names := spec.OpFeatures(s.Key.Op)
		s.Features = make([]float64, len(names))
		for j, n := range names {
			a, ok := feats[n]
			if !ok {
				a = c.f64(n)
				if c.err != nil {
					return out, fmt.Errorf("operator %s: %w", s.Key.Op, c.err)
				}
				feats[n] = a
			}
			if a.IsNull(i) {
				return out, fmt.Errorf("row %d: operator %s has no %s", i, s.Key.Op, n)
			}
			s.Features[j] = a.Value(i)
		}
		out = append(out, s)
	}
	return out, nil
}
