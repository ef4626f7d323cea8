package fit

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/ingest"
	"github.com/ftk-dev/ftk/spec"
)

func TestReport(t *testing.T) {
	ts := trainingSet(t, h800Tiny)
	b, err := Fit(ts, Options{Seed: 1, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Report(b, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(ts.Ops) {
		t.Fatalf("%d report rows for %d operators", len(rows), len(ts.Ops))
	}
	for _, r := range rows {
		if r.Missing || r.Rows == 0 || r.Stats.Rows == 0 {
			t.Errorf("%s: missing=%v rows=%d scored=%d", r.Key, r.Missing, r.Rows, r.Stats.Rows)
		}
		// The report on the training data is the bundle's all-rows
		// error: every row, nothing left out.
		p, _ := b.Predictor(r.Key)
		if m := p.Meta().AllRows; m.Rows != r.Stats.Rows || math.Abs(m.MAPE-r.Stats.MAPE) > 1e-9 {
			t.Errorf("%s: report MAPE %.4f%% on %d rows, bundle's all-rows %.4f%% on %d", r.Key, r.Stats.MAPE, r.Stats.Rows, m.MAPE, m.Rows)
		}
		if r.Stats.MAPE > r.NoiseFloorPct+25 {
			t.Errorf("%s: in-sample MAPE %.1f%% (noise floor %.1f%%)", r.Key, r.Stats.MAPE, r.NoiseFloorPct)
		}
	}
	var out bytes.Buffer
	if err := WriteReport(&out, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OPERATOR", "MAPE %", "HOLDOUT MAPE %", "NOISE FLOOR %", "attn_prefill", "moe_grouped_gemm", "mean MAPE over"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	// The predictors' out-of-domain counters are untouched by a report.
	for _, k := range b.Keys() {
		p, _ := b.Predictor(k)
		if p.Extrapolated() != 0 {
			t.Errorf("%s: report counted %d extrapolations", k, p.Extrapolated())
		}
	}
}

// TestReportDataset is "ftk validate ops BUNDLE DATASET": a bundle on the
// dataset it was fitted on, and refused on another device's dataset.
func TestReportDataset(t *testing.T) {
	dir := t.TempDir()
	h800, a800dir := filepath.Join(dir, "h800"), filepath.Join(dir, "a800")
	if _, err := ingest.Ingest([]string{filepath.Join(profiles, h800Tiny)}, h800, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Ingest([]string{filepath.Join(profiles, a800, "linear_op.csv")}, a800dir, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(h800)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := FromDataset(ds, spec.KernelOnly)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Fit(ts, Options{Seed: 1, Trees: 4})
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "h800.ko.arrow")
	if err := b.Write(bundle); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ReportDataset(&out, bundle, h800); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KERNEL_ONLY", "in-sample", "moe_grouped_gemm", "mean MAPE over"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	err = ReportDataset(&out, bundle, a800dir)
	if err == nil || !strings.Contains(err.Error(), "no KERNEL_ONLY samples") {
		t.Errorf("KERNEL_ONLY bundle on a CUDA_EVENT-only dataset: %v", err)
	}
	// A CUDA_EVENT bundle of the H800 profiles on the A800 dataset.
	ts, _ = FromDataset(ds, spec.CUDAEvent)
	if b, err = Fit(ts, Options{Seed: 1, Trees: 4}); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(bundle); err != nil {
		t.Fatal(err)
	}
	err = ReportDataset(&out, bundle, a800dir)
	if err == nil || !strings.Contains(err.Error(), "for device h800, not a800") {
		t.Errorf("H800 bundle on the A800 dataset: %v", err)
	}
}

func TestLookupSameShape(t *testing.T) {
	b, err := Fit(trainingSet(t, h800Tiny), Options{Seed: 1, Trees: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := spec.LookupModel("qwen3-30b-a3b-tiny")
	ln := spec.OpKey{Op: spec.OpInputLayernorm, TP: 8}
	if _, ok := b.Predictor(ln); ok {
		t.Fatal("the H800 profiles have input_layernorm at TP=8?")
	}
	p, ok := b.Lookup(m, ln)
	if !ok || p.Key().TP != 1 {
		t.Errorf("Lookup(%s) = %v, %v; want the TP=1 predictor", ln, p, ok)
	}
	// attn_pre_proj's shape depends on TP: no stand-in from another TP.
	if p, ok := b.Lookup(m, spec.OpKey{Op: spec.OpAttnPreProj, TP: 16}); ok {
		t.Errorf("attn_pre_proj at TP=16 answered by %s", p.Key())
	}
}

// TestZeroTimeOperator: KERNEL_ONLY reshapes launch no kernel and every row
// is 0 ms; the predictor answers 0, in and out of its domain.
func TestZeroTimeOperator(t *testing.T) {
	ts, err := FromDataset(loadProfiles(t, h800Tiny), spec.KernelOnly)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Fit(ts, Options{Seed: 1, Trees: 4})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := b.Predictor(spec.OpKey{Op: spec.OpAttnInputReshape, TP: 1})
	if !ok {
		t.Fatal("no attn_input_reshape predictor")
	}
	if p.Meta().Target != bundle.TargetZero {
		t.Errorf("target %s, want %s", p.Meta().Target, bundle.TargetZero)
	}
	for _, x := range []float64{1, 64, 1e6} {
		if v := p.PredictMs([]float64{x}); v != 0 {
			t.Errorf("PredictMs(%g) = %g, want 0", x, v)
		}
	}
}
