package fit

import (
	"path/filepath"
	"testing"
)

func TestFitWriteLoadA800(t *testing.T) {
	ts := trainingSet(t, "frontier-a800-qwen3-30b-a3b")
	b, err := Fit(ts, Options{Seed: 1, Trees: 16, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a800.bundle.arrow")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	lb, err := LoadBundle(path)
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
