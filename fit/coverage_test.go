package fit

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

const h800Tiny = "frontier-h800/Qwen3-30B-A3B-tiny"

// TestCoverageH800TinyFails: the tiny H800 profiles sample up to 128
// tokens; a simulation with a 4096-token budget would extrapolate, and the
// check says which operators and ranges.
func TestCoverageH800TinyFails(t *testing.T) {
	ts := trainingSet(t, h800Tiny)
	b, err := Fit(ts, Options{Seed: 1, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	m, err := spec.LookupModel(ts.Model)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := CheckCoverage(b, CoverageRequest{Model: m, Layout: spec.Layout{TP: 1},
		Limits: spec.EngineLimits{MaxNumBatchedTokens: 4096, MaxNumSeqs: 64, MaxModelLen: 4096, BlockSize: spec.DefaultBlockSize}, Device: b.Device()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatal("coverage OK for a 4096-token budget on profiles sampled up to 128 tokens")
	}
	cerr := rep.Err()
	if cerr == nil {
		t.Fatal("no error")
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%v", out.String(), cerr)
	msg := cerr.Error()
	for _, want := range []string{
		"attn_pre_proj[CUDA_EVENT tp=1]: num_tokens needs [1, 4096], sampled [1, 128]",
		"attn_prefill[CUDA_EVENT tp=1]: ",
		"prefill_chunk_size needs [1, 4096]",
		"attn_decode[CUDA_EVENT tp=1]: ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q", want)
		}
	}
	for _, e := range rep.Entries {
		if e.Status == StatusCovered && e.Need.Op == spec.OpAttnPreProj {
			t.Errorf("%s reported covered", e.Need)
		}
	}
	if cmds := rep.CollectCommands(); len(cmds) != 1 || !strings.Contains(cmds[0], "--max-num-batched-tokens 4096") ||
		!strings.Contains(cmds[0], "--device h800") || !strings.Contains(cmds[0], "linear") {
		t.Errorf("collect commands %q", cmds)
	}
	if !strings.Contains(out.String(), "ftk collect ") {
		t.Error("the table does not suggest a collect command")
	}
	if strings.Contains(rep.CollectCommands()[0], "--block-size") {
		t.Errorf("vLLM's default block size spelled out: %q", rep.CollectCommands()[0])
	}
	// attention rows are timed at their page size: a simulation at another
	// block size is told to collect at that size
	rep.Request.Limits.BlockSize = 32
	if cmds := rep.CollectCommands(); !strings.Contains(cmds[0], " --block-size 32") {
		t.Errorf("collect command for block size 32 lacks --block-size 32: %q", cmds[0])
	}
}

// TestCoverageMissingTP: a dataset without the layout's TP is a gap too.
func TestCoverageMissingTP(t *testing.T) {
	b, err := Fit(trainingSet(t, h800Tiny), Options{Seed: 1, Trees: 4})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := spec.LookupModel("qwen3-30b-a3b-tiny")
	if _, err := CheckCoverage(b, CoverageRequest{Model: m, Layout: spec.Layout{TP: 3},
		Limits: spec.EngineLimits{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 128, BlockSize: spec.DefaultBlockSize}}); err == nil {
		t.Error("TP=3 of 32 heads accepted")
	}
	rep, err := CheckCoverage(b, CoverageRequest{Model: m, Layout: spec.Layout{TP: 16},
		Limits: spec.EngineLimits{MaxNumBatchedTokens: 64, MaxNumSeqs: 8, MaxModelLen: 128, BlockSize: spec.DefaultBlockSize}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Error("coverage OK at a TP the dataset lacks")
	}
	for _, e := range rep.Entries {
		// Replicated ops are answered by their TP=1 predictor; every
		// op whose shape depends on TP is missing.
		replicated := bundle.SameShape(m, e.Need, spec.OpKey{Op: e.Need.Op, TP: 1, EP: e.Need.EP, Workers: e.Need.Workers})
		if (e.Status == StatusMissing) == replicated && e.Need.Op != spec.OpLMHead {
			t.Errorf("%s: status %s, replicated %v", e.Need, e.Status, replicated)
		}
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "attn_prefill[CUDA_EVENT tp=16]: no predictor") {
		t.Errorf("error %v does not name the missing TP", err)
	}
}

// coveringSet samples every operator of the query domain of m on l within
// lim with the roofline device model: a dataset that covers the domain by
// construction (what ftk collect --backend synthetic plans).
func coveringSet(m *spec.Model, l spec.Layout, lim spec.EngineLimits, dev *spec.Device) *TrainingSet {
	ts := &TrainingSet{Device: dev.Name, Model: m.Name, Measurement: spec.CUDAEvent}
	rf := roofline.Roofline{Device: roofline.NewDevice(dev)}
	for _, e := range spec.QueryDomain(m, l, lim) {
		k := e.Key
		k.Measurement = spec.CUDAEvent
		op, _ := bundle.OpShape(m, k)
		// Per feature: both ends and powers of two between them, so
		// neighbours are at most 2x apart.
		grid := make([][]float64, len(e.Ranges))
		for i, r := range e.Ranges {
			grid[i] = []float64{r.Min}
			for v := 1.0; v < r.Max; v *= 2 {
				if v > r.Min {
					grid[i] = append(grid[i], v)
				}
			}
			grid[i] = append(grid[i], r.Max)
		}
		var rows []Row
		var rec func(i int, x []float64)
		rec = func(i int, x []float64) {
			if i == len(grid) {
				x = append([]float64(nil), x...)
				noise := 1 + 0.02*math.Sin(float64(len(rows))*1.7)
				rows = append(rows, Row{X: x, TimeMs: rf.EventMs(op, x) * noise, Group: bundle.PrimaryGroup, Source: "roofline", Line: len(rows) + 1})
				return
			}
			for _, v := range grid[i] {
				rec(i+1, append(x, v))
			}
		}
		rec(0, nil)
		ts.Ops = append(ts.Ops, OpRows{Key: k, Rows: rows})
	}
	ts.sortOps()
	return ts
}

// TestCoverageCoveringDatasetPasses: a dataset sampled over the whole query
// domain passes, and so does the same check at smaller limits.
func TestCoverageCoveringDatasetPasses(t *testing.T) {
	m, _ := spec.LookupModel("qwen3-30b-a3b")
	dev, _ := spec.LookupDevice("h100")
	l := spec.Layout{TP: 2, EP: 2}
	lim := spec.EngineLimits{MaxNumBatchedTokens: 2048, MaxNumSeqs: 64, MaxModelLen: 2048, BlockSize: spec.DefaultBlockSize}
	b, err := Fit(coveringSet(m, l, lim, dev), Options{Seed: 1, Trees: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []spec.EngineLimits{lim, {MaxNumBatchedTokens: 512, MaxNumSeqs: 16, MaxModelLen: 1024, BlockSize: spec.DefaultBlockSize}} {
		rep, err := CheckCoverage(b, CoverageRequest{Model: m, Layout: l, Limits: q, Device: "h100"})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep.Print(&out)
		if !rep.OK() || rep.Err() != nil {
			t.Fatalf("covering dataset fails coverage at %+v: %v\n%s", q, rep.Err(), out.String())
		}
		for _, e := range rep.Entries {
			if e.Status != StatusCovered {
				t.Errorf("%s: %s", e.Need, e.Status)
			}
		}
		if len(rep.CollectCommands()) != 0 {
			t.Errorf("collect commands suggested for a covered domain: %v", rep.CollectCommands())
		}
	}
	// Twice the token budget leaves the domain.
	rep, _ := CheckCoverage(b, CoverageRequest{Model: m, Layout: l, Limits: spec.EngineLimits{MaxNumBatchedTokens: 4096, MaxNumSeqs: 64, MaxModelLen: 2048, BlockSize: spec.DefaultBlockSize}})
	if rep.OK() {
		t.Error("a budget twice the sampled one passes")
	}
}

// TestCoverageGaps: sampled neighbours farther apart than the gap ratio are
// reported but do not fail the check.
func TestCoverageGaps(t *testing.T) {
	pm := &bundle.PredictorMeta{Key: spec.OpKey{Op: spec.OpAttnPreProj, TP: 1}, Domain: []bundle.FeatureDomain{
		{Name: spec.FeatNumTokens, Min: 1, Max: 4096, Values: []float64{1, 2, 4, 8, 1024, 2048, 4096}},
	}}
	c := coverOne(pm.Key, pm, []spec.Range{{Min: 1, Max: 4096}}, 2)
	if c.Status != StatusGaps || len(c.Features[0].Gaps) != 1 || c.Features[0].Gaps[0] != (spec.Range{Min: 8, Max: 1024}) {
		t.Errorf("status %s, gaps %v; want one gap 8..1024", c.Status, c.Features[0].Gaps)
	}
	c = coverOne(pm.Key, pm, []spec.Range{{Min: 1, Max: 8}}, 2)
	if c.Status != StatusCovered {
		t.Errorf("need [1, 8]: status %s, want covered", c.Status)
	}
	c = coverOne(pm.Key, pm, []spec.Range{{Min: 0, Max: 8}}, 2)
	if c.Status != StatusExtrapolate || !c.Features[0].Below() {
		t.Errorf("need [0, 8]: status %s, want extrapolates below", c.Status)
	}
}
