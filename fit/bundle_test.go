package fit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
)

func TestFitWriteLoadA800(t *testing.T) {
	ts := trainingSet(t, "frontier-a800-qwen3-30b-a3b")
	b, err := Fit(ts, Options{Seed: 1, Trees: 16, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	// Every row is kept, so the A800 attention file's interleaved sweeps
	// and mixed batches (prefill at TP8: noise floor 12%, mixed rows 1.4x
	// the pure ones) are in the error: CV stays within 25 points of the
	// spread of the repeats, and the all-rows error covers every row.
	for _, o := range ts.Ops {
		p, _ := b.Predictor(o.Key)
		m := p.Meta()
		if m.CV.MAPE > m.Repeats.NoiseFloorPct+25 || m.CV.Rows == 0 {
			t.Errorf("%s: CV MAPE %.2f%% over %d rows, noise floor %.2f%%", o.Key, m.CV.MAPE, m.CV.Rows, m.Repeats.NoiseFloorPct)
		}
		if m.AllRows.Rows != len(o.Rows) || m.TrainRows != len(o.Rows) {
			t.Errorf("%s: all-rows error over %d rows, trained on %d, of %d", o.Key, m.AllRows.Rows, m.TrainRows, len(o.Rows))
		}
	}
	path := filepath.Join(t.TempDir(), "a800.bundle.arrow")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	lb, err := bundle.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Device() != "a800" || lb.Model() != "qwen3-30b-a3b" || lb.Measurement() != "CUDA_EVENT" {
		t.Errorf("loaded bundle is %s/%s/%s", lb.Device(), lb.Model(), lb.Measurement())
	}
	if len(lb.Keys()) != len(b.Keys()) {
		t.Fatalf("%d keys after load, %d before", len(lb.Keys()), len(b.Keys()))
	}
	for _, o := range ts.Ops {
		p1, _ := b.Predictor(o.Key)
		p2, ok := lb.Predictor(o.Key)
		if !ok {
			t.Fatalf("no predictor %s after load", o.Key)
		}
		for _, r := range o.Rows {
			if a, b := p1.PredictMs(r.X), p2.PredictMs(r.X); a != b {
				t.Fatalf("%s %v: %g before write, %g after load", o.Key, r.X, a, b)
			}
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

// TestBundleDeterministic: the same data and seed give a byte-identical
// bundle; another seed gives another.
func TestBundleDeterministic(t *testing.T) {
	dir := t.TempDir()
	var files [][]byte
	for i, seed := range []uint64{7, 7, 8} {
		p := filepath.Join(dir, fmt.Sprintf("b%d.arrow", i))
		if err := smallBundle(t, seed).Write(p); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("same seed, different bundle bytes")
	}
	if bytes.Equal(files[0], files[2]) {
		t.Error("another seed, same bundle bytes")
	}
}
