package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/ftk-dev/ftk/outlock"
	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// Options are the settings of one sweep run: a plan (or one shard of it),
// where its rows go and what measures them.
type Options struct {
	Plan PlanConfig
	// Device labels the sweep and, for the synthetic backend, gives the
	// device model's figures. A torch run on the CPU is labelled "cpu".
	Device *spec.Device
	// Out is the root output folder; rows go to Out/<device>/<model>/,
	// or Out/<device>/<model>/shard-<i>-of-<n>/ for a shard. The sweep
	// folder is locked while the sweep runs (package outlock): a second
	// sweep into it fails at once, naming this one by Command.
	Out string
	// Command is the command line of the run, named to a second writer.
	Command string
	// Backend is auto, synthetic or torch (see Resolve).
	Backend string
	// Measurements of the operator families (CUDA_EVENT, KERNEL_ONLY; CPU
	// for a torch run on the CPU). Host rows are always HOST_WALL.
	Measurements    []string
	Warmup, Repeats int
	Shard           Shard
	// Force deletes the requested families' rows and starts over.
	Force bool
	// MaxFailures stops the sweep after this many shapes failed in a row.
	MaxFailures int
	// ShapeTimeout bounds one shape's measurement; a worker that exceeds
	// it is killed and restarted.
	ShapeTimeout time.Duration
	Torch        TorchOptions
	// Version is the ftk version recorded in the sweep's YAML.
	Version string
	// Log receives notes and progress (stderr); Bar draws a progress bar
	// (stderr is a terminal) instead of a line per minute.
	Log io.Writer
	Bar bool

	// newBackend replaces the backend factory (tests).
	newBackend func(worker int) (Backend, error)
	// shapeDelay slows every shape down (tests of interruption).
	shapeDelay time.Duration
	// gpuSample replaces NVML readings (tests of throttling).
	gpuSample func(worker int) (GPUSample, bool)
}

// Summary reports a finished (or stopped) sweep.
type Summary struct {
	Dir       string
	Backend   string
	Shapes    int // in this shard
	Skipped   int // already in the files
	Measured  int
	Failed    int
	Remeasure int // shapes measured again after the GPU throttled
	Elapsed   time.Duration
}

// SweepDir is the folder a sweep writes: out/<device>/<model>, with a
// shard-<i>-of-<n> subfolder for a shard.
func SweepDir(out, device, model string, sh Shard) string {
	d := filepath.Join(out, device, model)
	if !sh.IsAll() {
		d = filepath.Join(d, fmt.Sprintf("shard-%d-of-%d", sh.Index, sh.Count))
	}
	return d
}

// sweep is one run in progress.
type sweep struct {
	o        Options
	plan     *Plan
	shapes   []Shape
	dir      string
	label    string // device label
	rows     rowMaker
	files    map[profilecsv.File]*appender
	failures *os.File // FailuresFile, opened at the first failure
	meta     *Meta
	nvml     *NVML
	gpus     []int // NVML index per worker (torch on CUDA)
}

// Run measures a plan (or one shard), appending rows as they are measured
// and skipping shapes the files already hold. It returns a summary even
// when it stops early, with the error that stopped it.
func Run(ctx context.Context, o Options) (*Summary, error) {
	start := time.Now()
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.MaxFailures < 1 {
		o.MaxFailures = 5
	}
	if o.ShapeTimeout <= 0 {
		o.ShapeTimeout = 5 * time.Minute
	}
	if o.Repeats < 1 {
		return nil, fmt.Errorf("repeats must be at least 1, got %d", o.Repeats)
	}
	if o.Plan.Model != nil { // the rows and ftk-collect.yaml record the resolved limits
		var err error
		if o.Plan.Limits, err = o.Plan.Limits.Resolve(o.Plan.Model); err != nil {
			return nil, err
		}
	}
	s := &sweep{o: o}
	defer s.closeNVML()
	if err := s.resolveBackend(ctx); err != nil {
		return nil, err
	}
	plan, err := NewPlan(o.Plan)
	if err != nil {
		return nil, err
	}
	s.plan, s.shapes = plan, s.o.Shard.Take(plan.Shapes)
	s.dir = SweepDir(s.o.Out, s.label, s.o.Plan.Model.Name, s.o.Shard)
	sum := &Summary{Dir: s.dir, Backend: s.o.Backend, Shapes: len(s.shapes)}
	lock, err := outlock.FromContext(ctx).Take(s.dir, o.Command)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	jobs, err := s.openFiles()
	defer s.closeFiles()
	if err != nil {
		return sum, err
	}
	sum.Skipped = len(s.shapes) - len(jobs)
	if len(jobs) == 0 {
		fmt.Fprintf(o.Log, "collect: all %d shapes of this sweep are already in %s\n", len(s.shapes), s.dir)
		sum.Elapsed = time.Since(start)
		return sum, s.finishMeta()
	}
	if sum.Skipped > 0 {
		fmt.Fprintf(o.Log, "collect: resuming in %s: %d of %d shapes already measured\n", s.dir, sum.Skipped, len(s.shapes))
	}
	err = s.measure(ctx, jobs, sum)
	sum.Elapsed = time.Since(start)
	if merr := s.finishMeta(); err == nil {
		err = merr
	}
	return sum, err
}

// job is a shape and the measurement types its files still lack.
type job struct {
	shape   *Shape
	pending []string
}

// outcome is a job's rows, or why it failed.
type outcome struct {
	job        job
	results    []result
	remeasured bool
	err        error
}

// measurementsOf returns the measurement types shape sh is timed with:
// host shapes are HOST_WALL, except host issue costs timed by the torch
// worker on a CPU, which hold only the Python and dispatcher part and are
// labelled CPU.
func (s *sweep) measurementsOf(sh *Shape) []string {
	if sh.Family == spec.FamilyCPU {
		if sh.Kind == KindIssue && s.o.Backend == BackendTorch && s.o.Torch.DeviceKind == KindCPU {
			return []string{spec.CPUTime}
		}
		return []string{spec.HostWall}
	}
	return s.o.Measurements
}

func (s *sweep) keyOf(sh *Shape, measurement string) profilecsv.File {
	return profilecsv.File{Family: sh.Family, Collective: sh.Collective, Measurement: measurement}
}

// openFiles prepares the folder (YAML check, --force) and opens every file
// of the requested families; it returns the jobs left to do.
func (s *sweep) openFiles() ([]job, error) {
	s.meta = s.newMeta()
	old, err := readMeta(s.dir)
	if err != nil {
		return nil, err
	}
	ops := map[profilecsv.File][]string{}
	for i := range s.plan.Shapes { // headers from the whole plan: shards share them
		sh := &s.plan.Shapes[i]
		for _, m := range s.measurementsOf(sh) {
			k := s.keyOf(sh, m)
			for _, o := range sh.Ops {
				if !slices.Contains(ops[k], o.Name) {
					ops[k] = append(ops[k], o.Name)
				}
			}
		}
	}
	keys := make([]profilecsv.File, 0, len(ops))
	for k := range ops {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].RelPath() < keys[j].RelPath() })
	if s.o.Force {
		for _, k := range keys {
			if err := os.Remove(filepath.Join(s.dir, k.RelPath())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
		if old != nil {
			for _, f := range s.o.Plan.Families {
				delete(old.Families, string(f))
			}
			if sameSweep(s.dir, old, s.meta) == nil {
				s.meta.Families = old.Families // other families' rows stay
			} else { // another sweep: none of its rows may stay under this YAML
				for _, fm := range old.Families {
					for _, f := range fm.Files {
						if err := os.Remove(filepath.Join(s.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
							return nil, err
						}
					}
				}
			}
		}
	} else if old != nil {
		if err := sameSweep(s.dir, old, s.meta); err != nil {
			return nil, err
		}
		for _, f := range s.o.Plan.Families {
			if fm := old.Families[string(f)]; fm != nil && fm.PlanChecksum != s.plan.FamilyChecksum(f) {
				return nil, fmt.Errorf("%s: the %s plan differs from the one measured there (other --gating-context, --routing-path, --load-distributions or ftk version?): use --force to start over, or another --out", s.dir, FamilyName(f))
			}
		}
		s.meta.Families = old.Families
	}
	if s.meta.Families == nil {
		s.meta.Families = map[string]*FamilyMeta{}
	}
	s.files = map[profilecsv.File]*appender{}
	done := map[profilecsv.File]map[string]bool{}
	for _, k := range keys {
		a, ex, err := openAppender(filepath.Join(s.dir, k.RelPath()), k.Header(ops[k]))
		if err != nil {
			return nil, err
		}
		if ex.tornTail > 0 {
			fmt.Fprintf(s.o.Log, "collect: %s: dropped a torn last line (%d bytes) left by an interrupted run\n", a.path, ex.tornTail)
		}
		s.files[k], done[k] = a, ex.done
	}
	for _, f := range s.o.Plan.Families {
		fm := &FamilyMeta{PlanChecksum: s.plan.FamilyChecksum(f), Status: "incomplete"}
		for _, k := range keys {
			if k.Family == f {
				fm.Files = append(fm.Files, k.RelPath())
			}
		}
		s.meta.Families[string(f)] = fm
	}
	var jobs []job
	for i := range s.shapes {
		sh := &s.shapes[i]
		s.meta.Families[string(sh.Family)].Shapes++
		var pending []string
		for _, m := range s.measurementsOf(sh) {
			if !done[s.keyOf(sh, m)][sh.ID] {
				pending = append(pending, m)
			}
		}
		if len(pending) > 0 {
			jobs = append(jobs, job{shape: sh, pending: pending})
		}
	}
	return jobs, writeMeta(s.dir, s.meta)
}

func (s *sweep) closeFiles() {
	for _, a := range s.files {
		a.Close()
	}
	if s.failures != nil {
		s.failures.Sync()
		s.failures.Close()
	}
}

// measure runs the jobs: per-GPU families spread over the workers, then
// collectives on worker 0 alone (they use every GPU of the group).
func (s *sweep) measure(ctx context.Context, jobs []job, sum *Summary) error {
	backends, err := s.openBackends(ctx)
	if err != nil {
		return err
	}
	defer func() {
		for _, b := range backends {
			b.Close()
		}
	}()
	var local, group []job
	for _, j := range jobs {
		if j.shape.Family == spec.FamilyCollective {
			group = append(group, j)
		} else {
			local = append(local, j)
		}
	}
	prog := newProgress(s.o.Log, len(jobs), s.o.Bar)
	defer prog.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streak := 0
	var stopErr error
	handle := func(out outcome) {
		if out.err != nil {
			if ctx.Err() != nil {
				return // interrupted: the shape is simply not done
			}
			sum.Failed++
			s.meta.Families[string(out.job.shape.Family)].Failed++
			streak++
			s.recordFailure(out)
			prog.Done(true)
			if streak >= s.o.MaxFailures && stopErr == nil {
				stopErr = fmt.Errorf("%d shapes failed in a row, stopping (last: shape %s: %v); see %s", streak, out.job.shape.ID, out.err, filepath.Join(s.dir, FailuresFile))
				cancel()
			}
			return
		}
		streak = 0
		for _, r := range out.results {
			k := s.keyOf(r.shape, r.measurement)
			a := s.files[k]
			if err := a.Append(s.rows.row(&r, a.header, a.rows)); err != nil && stopErr == nil {
				stopErr = err
				cancel()
			}
		}
		if out.remeasured {
			sum.Remeasure++
		}
		sum.Measured++
		prog.Done(false)
	}
	s.runPhase(ctx, local, backends, handle)
	if len(group) > 0 && ctx.Err() == nil {
		s.runPhase(ctx, group, backends[:1], handle)
	}
	if stopErr != nil {
		return stopErr
	}
	if err := ctx.Err(); err != nil {
		done := sum.Skipped + sum.Measured
		return fmt.Errorf("interrupted after %d of %d shapes (%d done before this run): re-run the same command to resume", done, sum.Shapes, sum.Skipped)
	}
	return nil
}

// runPhase feeds jobs to one goroutine per backend and hands outcomes to
// handle on the calling goroutine, so files are written from one place.
func (s *sweep) runPhase(ctx context.Context, jobs []job, backends []Backend, handle func(outcome)) {
	in := make(chan job)
	out := make(chan outcome)
	var wg sync.WaitGroup
	for w, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				out <- s.measureJob(ctx, w, b, j)
			}
		}()
	}
	go func() {
		defer close(in)
		for _, j := range jobs {
			select {
			case in <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	for o := range out {
		handle(o)
	}
}

// attempts is how often a shape is tried before it is recorded as failed.
const attempts = 2

// measureJob times one shape under its pending measurement types. A failed
// attempt is retried once (the backend restarts a dead worker); a result
// taken while the GPU throttled is taken once more.
func (s *sweep) measureJob(ctx context.Context, worker int, b Backend, j job) outcome {
	out := outcome{job: j}
	if s.o.shapeDelay > 0 {
		select {
		case <-time.After(s.o.shapeDelay):
		case <-ctx.Done():
			out.err = ctx.Err()
			return out
		}
	}
	for _, m := range j.pending {
		var r result
		var err error
		for attempt := 1; attempt <= attempts; attempt++ {
			r, err = s.measureOnce(ctx, worker, b, j.shape, m)
			if err == nil && r.gpu.valid && Throttled(r.gpu.ClockEventReasons) && r.remeasured == 0 {
				again, err2 := s.measureOnce(ctx, worker, b, j.shape, m)
				if err2 == nil {
					again.remeasured = 1
					r = again
					out.remeasured = true
				}
			}
			if err == nil || ctx.Err() != nil {
				break
			}
			fmt.Fprintf(s.o.Log, "collect: shape %s (%s) attempt %d failed: %v\n", j.shape.ID, j.shape.Family, attempt, err)
		}
		if err != nil {
			out.err = fmt.Errorf("%s: %w", m, err)
			return out
		}
		out.results = append(out.results, r)
	}
	return out
}

func (s *sweep) measureOnce(ctx context.Context, worker int, b Backend, sh *Shape, measurement string) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.ShapeTimeout)
	defer cancel()
	r := result{shape: sh, measurement: measurement, resp: map[string]*Response{}}
	before, sampled := s.sample(worker)
	for i := range sh.Ops {
		o := &sh.Ops[i]
		if o.Name == spec.OpIssueGraph && measurement == spec.CPUTime {
			continue // a CPU has no CUDA graph to replay: the column stays blank
		}
		req := newRequest(s.o.Plan.Model, sh, o, s.o.Plan.Limits.BlockSize, measurement, s.o.Warmup, s.o.Repeats)
		if s.o.Torch.GraphTiming && req.Timing == TimingKernelOnly {
			req.Timing = TimingCUDAGraph
		}
		resp, err := b.Measure(ctx, req)
		if err == nil {
			err = resp.validate()
		}
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("%s: no answer within the shape timeout %s: %w", o.Name, s.o.ShapeTimeout, err)
			}
			return r, fmt.Errorf("%s: %w", o.Name, err)
		}
		r.resp[o.Name] = resp
	}
	if sampled {
		if after, ok := s.sample(worker); ok {
			r.gpu = mergeSamples(before, after)
		}
	}
	return r, nil
}

// sample reads the worker's GPU, when NVML is open.
func (s *sweep) sample(worker int) (GPUSample, bool) {
	if s.o.gpuSample != nil {
		return s.o.gpuSample(worker)
	}
	if s.nvml == nil || worker >= len(s.gpus) {
		return GPUSample{}, false
	}
	g, err := s.nvml.Sample(s.gpus[worker])
	return g, err == nil
}

// has reports whether the files hold shape sh under measurement m.
func (s *sweep) has(sh *Shape, m string) bool {
	a := s.files[s.keyOf(sh, m)]
	return a != nil && a.ids[sh.ID]
}
