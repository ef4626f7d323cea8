package simulate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/fit"
	"github.com/ftk-dev/ftk/ingest"
	"github.com/ftk-dev/ftk/spec"
)

// fitBundle ingests the Vidur H100 profiles (Llama-2-7B MLP and attention
// projections, kernel times; NCCL all-reduce and send/recv) and fits a
// small bundle of the KERNEL_ONLY operator rows.
func fitBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	paths := []string{filepath.Join(sharedDir, "profiles/vidur-h100")}
	if _, err := ingest.Ingest(paths, filepath.Join(dir, "dataset"), ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(filepath.Join(dir, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := fit.FromDataset(ds, spec.KernelOnly)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fit.Fit(ts, fit.Options{Seed: 1, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "h100.bundle.arrow")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// A run on a real fit bundle prices the ops it has with their predictors,
// falls back to the roofline for the rest and reports both.
func TestRunWithFitBundle(t *testing.T) {
	path := fitBundle(t)
	cfg := testConfig()
	cfg.Model = "llama-2-7b"
	cfg.Engine.MaxModelLen = 4096
	cfg.Layout.TP = 2
	cfg.Bundle = path
	sum, sink, log, sim := simulate(t, cfg, reqs([3]float64{0, 1000, 20}, [3]float64{0.01, 500, 50}, [3]float64{0.02, 3000, 10}))
	cm := sum.CostModel
	if !strings.Contains(cm.Label, path) || cm.Measurement != spec.KernelOnly {
		t.Errorf("cost model %q (%s), want the bundle's KERNEL_ONLY predictors", cm.Label, cm.Measurement)
	}
	predicted, fallback := sim.cost.OpSources()
	t.Logf("predicted by the bundle: %v; roofline: %v", predicted, fallback)
	if len(predicted) == 0 || len(fallback) == 0 || len(cm.RooflineFallbacks) != len(fallback) {
		t.Errorf("%d ops predicted, %d fall back, %d fallbacks reported: %+v", len(predicted), len(fallback), len(cm.RooflineFallbacks), cm.RooflineFallbacks)
	}
	for _, f := range cm.RooflineFallbacks {
		if f.Queries <= 0 {
			t.Errorf("fallback %s with %d queries", f.Op, f.Queries)
		}
	}
	if len(sink.rows) != 3 || sum.Metrics.Completed != 3 {
		t.Fatalf("%d rows, %d completed", len(sink.rows), sum.Metrics.Completed)
	}
	// Every step takes what the cost model says for its batch.
	for i, s := range log.steps {
		if d := s.EndS - s.StartS; !near(d, s.Stages[0].Cost.TotalMs()/1e3) || !(d > 0) {
			t.Fatalf("step %d lasted %g s, cost %g ms", i, d, s.Stages[0].Cost.TotalMs())
		}
	}
	// The bundle must match the simulated device and model.
	cfg.Device = "a100"
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "h100") {
		t.Errorf("an H100 bundle on an A100: %v", err)
	}
	cfg.Device, cfg.Model = "h100", "llama-3.1-8b"
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "fitted for model") {
		t.Errorf("a Llama-2 bundle for Llama-3.1: %v", err)
	}
	cfg.Bundle = filepath.Join(t.TempDir(), "none.arrow")
	if _, err := New(cfg, Options{}); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("missing bundle: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// A CPU-overhead profile in the docs/formats.md schema, ingested and fitted as
// HOST_WALL predictors, prices the host side of every step: a decode step
// of b sequences spends schedule + prepare inputs before the forward pass
// and sampler + output processing after it, as the profile says.
func TestRunWithHostBundle(t *testing.T) {
	dir := t.TempDir()
	schedule := func(b, p float64) float64 { return 0.1 + 0.002*b + 1e-6*p }
	prepare := func(b, p float64) float64 { return 0.15 + 0.003*b + 1e-5*p }
	sampler := func(b float64) float64 { return 0.2 + 0.001*b }
	process := func(b float64) float64 { return 0.05 + 0.004*b }
	var sb strings.Builder
	sb.WriteString("model_name,batch_size,tensor_parallel_degree,num_prefill_tokens,num_decode_tokens,scheduling_mode," +
		"schedule_mean,schedule_median,sampler_e2e_mean,sampler_e2e_median,prepare_inputs_e2e_mean,prepare_inputs_e2e_median," +
		"process_model_outputs_mean,process_model_outputs_median,ray_comm_time_mean\n")
	for _, b := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256} {
		for _, p := range []int{0, 512, 2048, 8192} {
			d := b
			if p > 0 {
				d = b - 1
			}
			fb, fp := float64(b), float64(p)
			fmt.Fprintf(&sb, "llama-3.1-8b,%d,1,%d,%d,sync,%g,%g,%g,%g,%g,%g,%g,%g,0\n", b, p, d,
				schedule(fb, fp), schedule(fb, fp), sampler(fb), sampler(fb), prepare(fb, fp), prepare(fb, fp), process(fb), process(fb))
		}
	}
	csvPath := filepath.Join(dir, "profiles", "cpu_overhead.csv")
	os.MkdirAll(filepath.Dir(csvPath), 0o755)
	if err := os.WriteFile(csvPath, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Ingest([]string{filepath.Dir(csvPath)}, filepath.Join(dir, "dataset"), ingest.Options{Device: "h100", Model: "llama-3.1-8b"}); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(filepath.Join(dir, "dataset"))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := fit.FromDataset(ds, spec.HostWall)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fit.Fit(ts, fit.Options{Seed: 1, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "host.bundle.arrow")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.HostBundle = path
	sum, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 300, 6}, [3]float64{0, 300, 6}, [3]float64{0, 300, 6}, [3]float64{0, 300, 6}))
	if sum.CostModel.HostSource != cost.HostFromProfile || !strings.Contains(sum.CostModel.HostNote, "4 of 5 host parts") {
		t.Errorf("host %s: %s", sum.CostModel.HostSource, sum.CostModel.HostNote)
	}
	last := log.steps[len(log.steps)-1].Stages[0].Cost // 4 sequences decoding
	before, after := schedule(4, 0)+prepare(4, 0), sampler(4)+process(4)
	if math.Abs(last.Ms[cost.CompHostBefore]-before) > 0.05*before || math.Abs(last.Ms[cost.CompHostAfter]-after) > 0.05*after {
		t.Errorf("decode of 4: host %g + %g ms, profile says %g + %g", last.Ms[cost.CompHostBefore], last.Ms[cost.CompHostAfter], before, after)
	}
	// A bundle of device op times is not a host bundle.
	cfg.HostBundle = fitBundle(t)
	cfg.Model, cfg.Engine.MaxModelLen = "llama-2-7b", 4096
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "HOST_WALL") {
		t.Errorf("a CUDA_EVENT bundle as host bundle: %v", err)
	}
}
