package search

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/batchjob"

	"github.com/ftk-dev/ftk/simulate"
	"github.com/ftk-dev/ftk/spec"
)

// smallSettings is a search small enough for a unit test: llama-3.1-8b on
// two H100s, co-located and disaggregated, two engine limits each, 400
// requests of a fixed workload per probe.
func smallSettings(t *testing.T, slo string, topK int) Settings {
	t.Helper()
	m, err := spec.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSLO(slo)
	if err != nil {
		t.Fatal(err)
	}
	base := runresult.DefaultConfig()
	base.Model = m.Name
	base.Workload = runresult.WorkloadConfig{Workload: "fixed:1024x128", NumRequests: 400, Seed: 1}
	return Settings{
		Space: Space{Model: m, Pools: []Pool{{Device: "h100", GPUs: 2}}, MaxNumSeqs: []int{32, 256}, MaxNumBatchedTokens: []int{2048, 8192},
			ExecutionModes: []string{runresult.ExecCUDAGraph}, Modes: []string{runresult.ModeColocated, runresult.ModeDisaggregated}},
		Base: base, SLO: s, RateTolerance: 0.05, TopK: topK,
	}
}

// search runs a whole search into dir and writes its report.
func search(t *testing.T, s Settings, dir string, workers int) (*Outcome, *Report) {
	t.Helper()
	out, err := Run(context.Background(), s, Options{Dir: dir, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReport(s, out.Results)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteFiles(dir, simulate.Options{}, workers); err != nil {
		t.Fatal(err)
	}
	return out, rep
}

const testSLO = "ttft_p95_ms=300,tpot_p95_ms=12"

// The optimum of a pruned search is the optimum of an exhaustive one (no
// pruning: every candidate searched), and the exhaustive answer is right:
// each candidate holds at its rate (its probe and the ten times longer run
// that confirms it pass) and not one grid step above it.
func TestOptimumEqualsExhaustive(t *testing.T) {
	pruned := smallSettings(t, testSLO, 1)
	exhaustive := smallSettings(t, testSLO, 1000)
	outP, repP := search(t, pruned, t.TempDir(), 2)
	outE, repE := search(t, exhaustive, t.TempDir(), 2)
	if len(repE.Ranked) < 4 {
		t.Fatalf("exhaustive search ranked %d candidates; the test needs a real choice", len(repE.Ranked))
	}
	best, bestE := repP.Ranked[0], repE.Ranked[0]
	if best.ID != bestE.ID || best.RateRPS != bestE.RateRPS {
		t.Errorf("pruned search's best %s at %g req/s, exhaustive %s at %g", best.ID, best.RateRPS, bestE.ID, bestE.RateRPS)
	}
	if probes(outP) >= probes(outE) {
		t.Errorf("pruning saved nothing: %d probes against %d", probes(outP), probes(outE))
	}
	g := grid{tol: exhaustive.RateTolerance}
	wl, err := newWorkload(exhaustive.Base.Workload)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range repE.Ranked[:4] {
		p := &prober{cfg: r.Candidate.Config(exhaustive.Base), wl: wl, slo: exhaustive.SLO}
		holds := func(k int) (bool, string) {
			for _, n := range []int{wl.cfg.NumRequests, wl.longN()} {
				pr, err := p.probeN(g.rate(k), n, false)
				if err != nil {
					t.Fatal(err)
				}
				if !pr.Pass {
					return false, pr.Why
				}
			}
			return true, ""
		}
		at, why := holds(r.RateIndex)
		above, _ := holds(r.RateIndex + 1)
		if !at || above {
			t.Errorf("%s: holds at its rate %g: %v (%s); holds one step above: %v", r.ID, r.RateRPS, at, why, above)
		}
	}
}

// A looser SLO never lowers a candidate's rate, nor the best goodput.
func TestSLOMonotone(t *testing.T) {
	var prev map[string]float64
	prevBest := 0.0
	for _, slo := range []string{"ttft_p95_ms=150,tpot_p95_ms=9", testSLO, "ttft_p95_ms=1000,tpot_p95_ms=20"} {
		_, rep := search(t, smallSettings(t, slo, 1000), t.TempDir(), 2)
		rates := map[string]float64{}
		for _, r := range rep.Rows {
			rates[r.ID] = r.RateRPS
			if prev != nil && r.RateRPS < prev[r.ID] {
				t.Errorf("%s: %g req/s under %s, %g under the tighter SLO", r.ID, r.RateRPS, slo, prev[r.ID])
			}
		}
		best := 0.0
		if len(rep.Ranked) > 0 {
			best = rep.Ranked[0].GoodputPerGPU
		}
		if best < prevBest {
			t.Errorf("best goodput %g per GPU under %s, %g under the tighter SLO", best, slo, prevBest)
		}
		prev, prevBest = rates, best
	}
	if prevBest == 0 {
		t.Error("no candidate meets even the loosest SLO")
	}
}

func readFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if filepath.Base(path) == resultFile {
			return nil // holds probe counts, which depend on the order of evaluation
		}
		data, err := os.ReadFile(path)
		out[rel] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d files against %d", what, len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s: %s differs", what, name)
		}
	}
}

// The same settings give the same bytes, with any number of workers, and
// whatever the order the candidates are searched in (shuffled, as Run
// does, or in enumeration order): the order changes only the work.
func TestDeterministic(t *testing.T) {
	s := smallSettings(t, testSLO, 3)
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	outA, _ := search(t, s, a, 1)
	search(t, s, b, 3)
	files := readFiles(t, a)
	if files[ResultsFile] == nil || files[ParetoFile] == nil {
		t.Fatalf("no %s or %s in %v", ResultsFile, ParetoFile, a)
	}
	sameFiles(t, "1 worker against 3", files, readFiles(t, b))
	outC, err := Run(context.Background(), s, Options{Dir: c, Workers: 1, enumerationOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReport(s, outC.Results)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteFiles(c, simulate.Options{}, 1); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "shuffled against enumeration order", files, readFiles(t, c))
	if probes(outA) == probes(outC) {
		t.Errorf("the order changed nothing: %d simulations both ways; the test compares nothing", probes(outA))
	}
}

// probes is the simulations a search ran.
func probes(o *Outcome) (n int) {
	for _, r := range o.Results {
		n += r.Probes
	}
	return n
}

// Shards run one after the other into one folder, then the whole search
// over that folder (the merge) evaluates nothing more and reports what an
// unsharded search reports.
func TestShardsMergeToUnsharded(t *testing.T) {
	s := smallSettings(t, testSLO, 3)
	sharded, whole := t.TempDir(), t.TempDir()
	total := 0
	for i := range 3 {
		out, err := Run(context.Background(), s, Options{Dir: sharded, Workers: 2, Shard: batchjob.Shard{Index: i, Count: 3}})
		if err != nil {
			t.Fatal(err)
		}
		total += out.Candidates
		if _, err := os.Stat(filepath.Join(sharded, ResultsFile)); err == nil {
			t.Fatalf("shard %d wrote the report", i)
		}
	}
	out, _ := search(t, s, sharded, 2)
	if out.Candidates != total || out.Resumed != total {
		t.Errorf("merge: %d candidates, %d already searched; the shards searched %d", out.Candidates, out.Resumed, total)
	}
	search(t, s, whole, 2)
	sameFiles(t, "merged shards against one search", readFiles(t, sharded), readFiles(t, whole))
}

// Results of other settings in the folder are refused, not mixed in.
func TestRefusesOtherSettings(t *testing.T) {
	dir := t.TempDir()
	s := smallSettings(t, testSLO, 3)
	s.Space.Modes = []string{runresult.ModeDisaggregated}
	s.Space.MaxNumSeqs, s.Space.MaxNumBatchedTokens = []int{256}, []int{8192}
	if _, err := Run(context.Background(), s, Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	s.SLO[0].LimitMs++
	if _, err := Run(context.Background(), s, Options{Dir: dir}); err == nil {
		t.Error("a search with another SLO accepted the folder of the first")
	}
}
