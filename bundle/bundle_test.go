package bundle_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/fit"
	"github.com/ftk-dev/ftk/ingest"
	"github.com/ftk-dev/ftk/spec"
)

// The bundle format's tests: a small bundle fitted (package fit, the
// writer's one caller) on the real A800 profiles of testdata, then read
// through this package.

// smallBundles caches the fitted bundle of each seed.
var smallBundles sync.Map

// smallBundle fits attn_prefill and attn_pre_proj at TP4 of the A800
// Qwen3-30B-A3B profiles with 8 trees.
func smallBundle(t *testing.T, seed uint64) *bundle.Bundle {
	t.Helper()
	if b, ok := smallBundles.Load(seed); ok {
		return b.(*bundle.Bundle)
	}
	dir := filepath.Join(t.TempDir(), "dataset")
	if _, err := ingest.Ingest([]string{"../testdata/profiles/frontier-a800-qwen3-30b-a3b"}, dir, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := fit.FromDataset(ds, spec.CUDAEvent)
	if err != nil {
		t.Fatal(err)
	}
	sub := &fit.TrainingSet{Device: ts.Device, Model: ts.Model, Measurement: ts.Measurement, Checksum: ts.Checksum}
	for _, o := range ts.Ops {
		if o.Key.TP == 4 && (o.Key.Op == spec.OpAttnPrefill || o.Key.Op == spec.OpAttnPreProj) {
			sub.Ops = append(sub.Ops, o)
		}
	}
	b, err := fit.Fit(sub, fit.Options{Seed: seed, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	smallBundles.Store(seed, b)
	return b
}

// queries returns n points spread over p's domain.
func queries(p *bundle.Predictor, n int) [][]float64 {
	dom := p.Domain()
	out := make([][]float64, n)
	for i := range out {
		x := make([]float64, len(dom))
		for j, r := range dom {
			f := math.Mod(float64(i)*(0.618034+0.1*float64(j)), 1)
			x[j] = math.Round(r.Min + f*(r.Max-r.Min))
		}
		out[i] = x
	}
	return out
}

// TestPredictConcurrent: predictors are safe for concurrent use and count
// every out-of-domain query once.
func TestPredictConcurrent(t *testing.T) {
	b := smallBundle(t, 1)
	var p *bundle.Predictor
	for _, k := range b.Keys() {
		if k.Op == spec.OpAttnPrefill {
			p, _ = b.Predictor(k)
		}
	}
	dom := p.Domain()
	in := []float64{dom[0].Min, (dom[1].Min + dom[1].Max) / 2}
	out := []float64{dom[0].Max * 3, dom[1].Max * 2}
	want := p.PredictMs(in)
	p.ResetExtrapolated()
	var wg sync.WaitGroup
	const workers, each = 8, 2000
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if v := p.PredictMs(in); v != want {
					t.Errorf("concurrent prediction %g, want %g", v, want)
					return
				}
				p.PredictMs(out)
			}
		}()
	}
	wg.Wait()
	if got := p.Extrapolated(); got != workers*each {
		t.Errorf("Extrapolated() = %d, want %d", got, workers*each)
	}
	if n := b.Extrapolated()[p.Key()]; n != workers*each {
		t.Errorf("bundle counts %d", n)
	}
	if p.PredictMs([]float64{1}) == p.PredictMs([]float64{1}) {
		t.Error("a query with the wrong number of features is not NaN")
	}
}

// TestBundleAPI: keys are sorted; an empty measurement means the bundle's.
func TestBundleAPI(t *testing.T) {
	b := smallBundle(t, 1)
	keys := b.Keys()
	if !slices.IsSortedFunc(keys, bundle.CompareKeys) || len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
	k := keys[0]
	k.Measurement = ""
	if p, ok := b.Predictor(k); !ok || p.Key() != keys[0] {
		t.Errorf("lookup without measurement: %v %v", p, ok)
	}
	k.Measurement = spec.KernelOnly
	if _, ok := b.Predictor(k); ok {
		t.Error("KERNEL_ONLY key answered by a CUDA_EVENT bundle")
	}
	p, _ := b.Predictor(keys[0])
	if got := p.Domain(); len(got) != len(spec.OpFeatures(keys[0].Op)) || got[0].Min > got[0].Max {
		t.Errorf("domain %v", got)
	}
}

// TestBundleFormatAsDocumented reads a bundle the way docs/formats.md tells a
// pyarrow user to (columns by name, node indices local to their tree, the
// JSON metadata) and checks that evaluating it by hand gives PredictMs.
func TestBundleFormatAsDocumented(t *testing.T) {
	b := smallBundle(t, 1)
	path := filepath.Join(t.TempDir(), "b.arrow")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	raw, _ := md.GetValue("ftk.bundle")
	var meta struct {
		Device      string `json:"device"`
		Measurement string `json:"measurement_type"`
		Predictors  []struct {
			Key struct {
				Op string `json:"op"`
				TP int    `json:"tp"`
			} `json:"key"`
			Target  string  `json:"target"`
			FloorMs float64 `json:"floor_ms"`
			Domain  []struct {
				Name string  `json:"name"`
				Min  float64 `json:"min"`
				Max  float64 `json:"max"`
			} `json:"domain"`
			Measured []struct {
				X  []float64 `json:"x"`
				Ms float64   `json:"ms"`
			} `json:"measured"`
		} `json:"predictors"`
	}
	if err := json.Unmarshal([]byte(raw), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Device != "a800" || meta.Measurement != "CUDA_EVENT" || len(meta.Predictors) != 2 {
		t.Fatalf("metadata %+v", meta)
	}
	type row struct {
		feature     int32
		thr, value  float64
		left, right int32
	}
	trees := map[[2]int32][]row{} // (predictor, tree) -> nodes by local index
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) any { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		pred, tree, nd := col("predictor").(*array.Int32), col("tree").(*array.Int32), col("node").(*array.Int32)
		feat, thr, left, right, val := col("feature").(*array.Int32), col("threshold").(*array.Float64),
			col("left").(*array.Int32), col("right").(*array.Int32), col("value").(*array.Float64)
		for j := 0; j < int(rec.NumRows()); j++ {
			k := [2]int32{pred.Value(j), tree.Value(j)}
			if int(nd.Value(j)) != len(trees[k]) {
				t.Fatalf("node %d of %v out of order", nd.Value(j), k)
			}
			trees[k] = append(trees[k], row{feat.Value(j), thr.Value(j), val.Value(j), left.Value(j), right.Value(j)})
		}
	}
	for pi, pm := range meta.Predictors {
		p, _ := b.Predictor(b.Meta().Predictors[pi].Key)
		for _, x := range queries(p, 200) {
			var sum float64
			n := 0
			for tr := int32(0); ; tr++ {
				nodes, ok := trees[[2]int32{int32(pi), tr}]
				if !ok {
					break
				}
				i := 0
				for nodes[i].feature >= 0 {
					if x[nodes[i].feature] <= nodes[i].thr {
						i = int(nodes[i].left)
					} else {
						i = int(nodes[i].right)
					}
				}
				sum += nodes[i].value
				n++
			}
			r := sum / float64(n)
			var ms float64
			measured := false
			for _, m := range pm.Measured {
				if slices.Equal(m.X, x) {
					ms, measured = m.Ms, true
				}
			}
			switch {
			case measured: // a measured shape answers its measurement
			case pm.Target == bundle.TargetLogRatio:
				ms = math.Max(p.FallbackMs(x), pm.FloorMs) * math.Exp(r)
			case pm.Target == bundle.TargetLog:
				ms = math.Exp(r)
			default:
				ms = r
			}
			if got := p.PredictMs(x); math.Abs(got-ms) > 1e-9*ms {
				t.Fatalf("%s %v: by hand %g, PredictMs %g", pm.Key.Op, x, ms, got)
			}
		}
	}
}
