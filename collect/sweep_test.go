package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// syntheticOptions is a synthetic sweep of c into out, labelled h800.
func syntheticOptions(t testing.TB, out string, c PlanConfig) Options {
	return Options{Plan: c, Device: mustDevice(t, "h800"), Out: out, Backend: BackendSynthetic, Warmup: 2, Repeats: 5}
}

// sweepIDs returns, per CSV file of a sweep folder, its shape IDs in order.
func sweepIDs(t testing.TB, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range csvFiles(t, dir) {
		h, rows := readCSV(t, filepath.Join(dir, f))
		out[f] = column(t, h, rows, "shape_id")
	}
	return out
}

// checkComplete asserts that every file holds each planned shape of its
// family exactly once: host shapes in one file, the others in one file
// per measurement type.
func checkComplete(t *testing.T, dir string, p *Plan, measurements int) {
	t.Helper()
	want := map[string]int{}
	for i := range p.Shapes {
		want[p.Shapes[i].ID]++
	}
	files := sweepIDs(t, dir)
	if len(files) == 0 {
		t.Fatalf("%s: no files", dir)
	}
	total := 0
	for f, ids := range files {
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("%s: shape %s twice", f, id)
			}
			if want[id] == 0 {
				t.Errorf("%s: shape %s not in the plan", f, id)
			}
			seen[id] = true
		}
		total += len(ids)
	}
	hosts := p.Count(spec.FamilyCPU)
	if n := (len(p.Shapes)-hosts)*measurements + hosts; total != n {
		t.Errorf("%s: %d rows over all files, want %d", dir, total, n)
	}
}

func TestRunResumeAndForce(t *testing.T) {
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 2, EP: 2}})
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	o := syntheticOptions(t, dir, c)
	o.Log = &log
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Measured != len(p.Shapes) || sum.Skipped != 0 || sum.Failed != 0 {
		t.Fatalf("first run: %+v, plan has %d shapes", sum, len(p.Shapes))
	}
	sweep := SweepDir(dir, "h800", "tiny-moe", Shard{})
	checkComplete(t, sweep, p, 2)
	before := sweepIDs(t, sweep)
	sum, err = Run(context.Background(), o)
	if err != nil || sum.Measured != 0 || sum.Skipped != len(p.Shapes) {
		t.Fatalf("re-run: %+v, %v: want every shape skipped", sum, err)
	}
	meta, err := readMeta(sweep)
	if err != nil || meta == nil || !meta.Synthetic || meta.Backend != BackendSynthetic || meta.Device != "h800" {
		t.Fatalf("yaml: %+v, %v", meta, err)
	}
	for f, fm := range meta.Families {
		if fm.Status != "complete" || fm.PlanChecksum != p.FamilyChecksum(spec.Family(f)) {
			t.Errorf("family %s: %+v", f, fm)
		}
	}
	o.Force = true
	sum, err = Run(context.Background(), o)
	if err != nil || sum.Measured != len(p.Shapes) {
		t.Fatalf("--force: %+v, %v", sum, err)
	}
	if after := sweepIDs(t, sweep); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Error("--force did not rebuild the same files")
	}
}

// Synthetic output is byte-identical for the same inputs and seed.
func TestRunDeterministic(t *testing.T) {
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 2, EP: 2}}, spec.FamilyMoE, spec.FamilyCollective)
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if _, err := Run(context.Background(), syntheticOptions(t, d, c)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range csvFiles(t, SweepDir(a, "h800", "tiny-moe", Shard{})) {
		x, _ := os.ReadFile(filepath.Join(SweepDir(a, "h800", "tiny-moe", Shard{}), f))
		y, _ := os.ReadFile(filepath.Join(SweepDir(b, "h800", "tiny-moe", Shard{}), f))
		if string(x) != string(y) {
			t.Errorf("%s differs between identical runs", f)
		}
	}
}

// Shards 0/3, 1/3 and 2/3 together hold exactly the unsharded run's rows.
func TestShardsMergeToTheWholeRun(t *testing.T) {
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 2, EP: 2}})
	if _, err := Run(context.Background(), syntheticOptions(t, dir, c)); err != nil {
		t.Fatal(err)
	}
	whole := rowsByFile(t, SweepDir(dir, "h800", "tiny-moe", Shard{}))
	merged := map[string][]string{}
	for i := 0; i < 3; i++ {
		o := syntheticOptions(t, dir, c)
		o.Shard = Shard{Index: i, Count: 3}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		sd := SweepDir(dir, "h800", "tiny-moe", o.Shard)
		meta, err := readMeta(sd)
		if err != nil || meta.Shard != fmt.Sprintf("%d/3", i+1) { // 1-based in the YAML
			t.Fatalf("shard %d yaml: %+v %v", i, meta, err)
		}
		for f, rows := range rowsByFile(t, sd) {
			merged[f] = append(merged[f], rows...)
		}
	}
	if len(merged) != len(whole) {
		t.Fatalf("shards wrote %d files, the whole run %d", len(merged), len(whole))
	}
	for f, rows := range whole {
		got := merged[f]
		slices.Sort(got)
		slices.Sort(rows)
		if !slices.Equal(got, rows) {
			t.Errorf("%s: the shards' %d rows differ from the whole run's %d", f, len(got), len(rows))
		}
	}
}

// rowsByFile returns each file's rows as text, without the network files'
// row index (it numbers rows per file).
func rowsByFile(t *testing.T, dir string) map[string][]string {
	out := map[string][]string{}
	for _, f := range csvFiles(t, dir) {
		h, rows := readCSV(t, filepath.Join(dir, f))
		for _, r := range rows {
			if h[0] == "" {
				r = r[1:]
			}
			out[f] = append(out[f], strings.Join(r, ","))
		}
	}
	return out
}

func TestRunRefusesAnotherSweep(t *testing.T) {
	dir := t.TempDir()
	m := tinyMoE(t)
	c := planConfig(m, smallLimits, []spec.Layout{{TP: 2, EP: 2}}, spec.FamilyLinear, spec.FamilyMoE)
	if _, err := Run(context.Background(), syntheticOptions(t, dir, c)); err != nil {
		t.Fatal(err)
	}
	other := c
	other.Limits.MaxModelLen = 32
	if _, err := Run(context.Background(), syntheticOptions(t, dir, other)); err == nil || !strings.Contains(err.Error(), "engine limits") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("other limits into the same folder: %v", err)
	}
	dists := c
	dists.Distributions = []string{DistUniform}
	if _, err := Run(context.Background(), syntheticOptions(t, dir, dists)); err == nil || !strings.Contains(err.Error(), "moe plan differs") {
		t.Errorf("other MoE plan into the same folder: %v", err)
	}
	// Another family into the same folder is fine and keeps the first ones.
	att := c
	att.Families = []spec.Family{spec.FamilyAttention}
	if _, err := Run(context.Background(), syntheticOptions(t, dir, att)); err != nil {
		t.Fatal(err)
	}
	sweep := SweepDir(dir, "h800", m.Name, Shard{})
	meta, _ := readMeta(sweep)
	for _, f := range []string{"linear_op", "moe", "attention"} {
		if meta.Families[f] == nil || meta.Families[f].Status != "complete" {
			t.Errorf("yaml family %s: %+v", f, meta.Families[f])
		}
	}
	// --force with other limits starts the folder over: no row of the old
	// sweep stays under the new YAML.
	forced := other
	forced.Families = []spec.Family{spec.FamilyLinear}
	o := syntheticOptions(t, dir, forced)
	o.Force = true
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := csvFiles(t, sweep); !slices.Equal(got, []string{"linear_op.csv", "linear_op_kernel_only.csv"}) {
		t.Errorf("after --force with other limits: %v", got)
	}
	if meta, _ := readMeta(sweep); len(meta.Families) != 1 || meta.EngineLimits != other.Limits {
		t.Errorf("yaml after --force: %+v", meta)
	}
}

// flaky fails chosen shapes: a dead or erroring worker.
type flaky struct {
	inner Backend
	fail  func(req *Request) bool
	calls int
}

func (f *flaky) Measure(ctx context.Context, req *Request) (*Response, error) {
	f.calls++
	if f.fail(req) {
		return nil, errors.New("worker exited (signal: killed)")
	}
	return f.inner.Measure(ctx, req)
}

func (f *flaky) Close() error { return nil }

func TestRunRecordsFailuresAndStops(t *testing.T) {
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 1}}, spec.FamilyLinear)
	p, _ := NewPlan(c)
	bad := p.Shapes[3].ID
	o := syntheticOptions(t, dir, c)
	b := &flaky{inner: NewSynthetic(o.Device, 0), fail: func(r *Request) bool { return strings.HasPrefix(r.ID, bad) }}
	o.newBackend = func(int) (Backend, error) { return b, nil }
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 1 || sum.Measured != len(p.Shapes)-1 {
		t.Errorf("summary %+v: want 1 failed shape", sum)
	}
	sweep := SweepDir(dir, "h800", "tiny-moe", Shard{})
	data, err := os.ReadFile(filepath.Join(sweep, FailuresFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var f Failure
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &f) != nil || f.ShapeID != bad || !strings.Contains(f.Error, "worker exited") {
		t.Errorf("%s: %q", FailuresFile, data)
	}
	meta, _ := readMeta(sweep)
	if fm := meta.Families["linear_op"]; fm.Status != "incomplete" || fm.Failed != 1 {
		t.Errorf("yaml: %+v", fm)
	}
	// Everything fails: the sweep stops after MaxFailures in a row.
	o.Force, o.MaxFailures = true, 3
	all := &flaky{inner: b.inner, fail: func(*Request) bool { return true }}
	o.newBackend = func(int) (Backend, error) { return all, nil }
	sum, err = Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "3 shapes failed in a row") || sum.Failed != 3 {
		t.Errorf("all failing: %+v, %v", sum, err)
	}
	if all.calls < 6 || all.calls > 8 { // each shape tried twice; the next one may have started
		t.Errorf("%d attempts, want 6 (3 shapes x 2) to 8", all.calls)
	}
}

// A shape measured while the GPU throttled is measured once more and the
// reasons go into the row.
func TestRunRemeasuresThrottledShapes(t *testing.T) {
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 1}}, spec.FamilyLinear)
	o := syntheticOptions(t, dir, c)
	n := 0
	o.gpuSample = func(int) (GPUSample, bool) {
		n++
		s := GPUSample{SMClockMHz: 1980, MemClockMHz: 2619, TemperatureC: 60, PowerW: 350}
		if n == 2 { // during the first shape's first measurement
			s.SMClockMHz, s.ClockEventReasons = 1400, reasonSwThermalSlowdown
		}
		return s, true
	}
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Remeasure != 1 {
		t.Errorf("re-measured %d shapes, want 1", sum.Remeasure)
	}
	h, rows := readCSV(t, filepath.Join(SweepDir(dir, "h800", "tiny-moe", Shard{}), "linear_op.csv"))
	if got := column(t, h, rows, "remeasured")[0]; got != "1" {
		t.Errorf("first row remeasured = %s", got)
	}
	if got := column(t, h, rows, "sm_clock_mhz")[1]; got != "1980" {
		t.Errorf("second row sm_clock_mhz = %q", got)
	}
}

// recorder is a backend that keeps the timing method of every request.
type recorder struct {
	inner   Backend
	timings map[string]bool
}

func (r *recorder) Measure(ctx context.Context, req *Request) (*Response, error) {
	r.timings[req.Timing] = true
	return r.inner.Measure(ctx, req)
}

func (r *recorder) Close() error { return nil }

// GraphTiming asks for KERNEL_ONLY shapes as CUDA-graph replays
// (timing cuda_graph); CUDA_EVENT shapes keep their CUDA events.
func TestGraphTimingAsksForReplays(t *testing.T) {
	for _, graph := range []bool{false, true} {
		dir := t.TempDir()
		c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 1}}, spec.FamilyLinear)
		o := syntheticOptions(t, dir, c)
		o.Torch.GraphTiming = graph
		r := &recorder{inner: NewSynthetic(o.Device, 0), timings: map[string]bool{}}
		o.newBackend = func(int) (Backend, error) { return r, nil }
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{TimingCUDAEvent: true, TimingKernelOnly: !graph, TimingCUDAGraph: graph}
		for timing, asked := range want {
			if r.timings[timing] != asked {
				t.Errorf("graph timing %v: timings asked %v, want %s %v", graph, r.timings, timing, asked)
			}
		}
	}
}
