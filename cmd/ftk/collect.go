package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftk-dev/ftk/batchjob"
	"github.com/ftk-dev/ftk/collect"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

func collectCommand() *cli.Command {
	return &cli.Command{
		Name:      "collect",
		Usage:     "profile operators on a GPU, the CPU, or the built-in synthetic device model",
		ArgsUsage: "linear|attention|moe|collectives|host|all ...",
		Description: `collect plans the shapes a simulation of MODEL on the given layouts and engine
limits will query (the domain "ftk fit --check-coverage" checks), measures them
and writes Frontier/Vidur-format CSV files plus ftk-collect.yaml to
OUT/<device>/<model>/ (OUT/<device>/<model>/shard-<i>-of-<n>/ for a shard):
linear_op.csv, attention.csv, moe.csv (CUDA_EVENT), *_kernel_only.csv
(KERNEL_ONLY), network/{all_reduce,send_recv,ep_dispatch,ep_combine}.csv and
cpu_overhead.csv. "ftk ingest" reads them.

Backends: synthetic (the roofline device model, rows labelled
profiling_backend=synthetic), torch (a PyTorch worker per GPU; --device-kind
cpu runs it on the host CPU, labelled CPU), auto (torch when an NVIDIA GPU and
a Python with torch are found, else synthetic, said on stderr).

Rows are appended as they are measured: re-running the same command resumes
and skips the shapes already there; --force starts over.

Examples:
  ftk collect all --backend synthetic --model qwen3-30b-a3b --device h100 --tp 8 --ep 8
  ftk collect moe --model qwen3-30b-a3b --device h100 --ep 8 --plan-only
  ftk collect linear attention --model llama-3.1-8b --device h100 --tp 1,2 --shard 0/4
  ftk collect all --model llama-3.1-8b --device h100 --emit slurm --shards 8 > collect.sbatch
  ftk collect linear --backend torch --device-kind cpu --model llama-2-7b --max-num-batched-tokens 16 --max-num-seqs 16 --repeats 3`,
		Flags: append(engineLimitFlags(""),
			&cli.StringFlag{Name: "model", Usage: "model: a catalog name or a config.json path (required)"},
			&cli.StringFlag{Name: "device", Usage: "device the sweep is labelled with and the synthetic backend models (default: the GPU found)"},
			&cli.IntSliceFlag{Name: "tp", Aliases: []string{"tensor-parallel-size"}, Value: []int{1}, Usage: "tensor-parallel degrees, e.g. 1,2,8"},
			&cli.IntSliceFlag{Name: "ep", Value: []int{1}, Usage: "expert-parallel degrees (MoE models); EP > TP implies DP = EP/TP"},
			&cli.IntSliceFlag{Name: "pp", Aliases: []string{"pipeline-parallel-size"}, Value: []int{1}, Usage: "pipeline-parallel degrees (PP > 1 adds send/recv)"},
			&cli.StringFlag{Name: "backend", Value: collect.BackendAuto, Usage: "auto, synthetic or torch"},
			&cli.StringFlag{Name: "device-kind", Value: collect.KindCUDA, Usage: "torch backend: cuda or cpu"},
			&cli.StringFlag{Name: "python", Usage: "torch backend: Python interpreter (default: the first of $FTK_PYTHON, python3, /usr/bin/python3 that imports torch)"},
			&cli.IntSliceFlag{Name: "gpus", Usage: "torch backend: GPU indices, one worker each (default: all)"},
			&cli.IntFlag{Name: "threads", Usage: "torch backend: CPU threads per worker (0: torch's default)"},
			&cli.StringFlag{Name: "kernels", Value: collect.KernelsAuto, Usage: "torch backend: what the operators run: vllm (vLLM's kernels as the engine calls them), compiled (no vLLM: torch.compile of each op as vLLM writes it), eager (plain PyTorch), auto (vllm if it imports, else compiled); rows record it in kernel_source"},
			&cli.BoolFlag{Name: "cuda-graph-timing", Usage: "torch backend: time KERNEL_ONLY shapes as CUDA-graph replays of the op (as graph modes run it) instead of the profiler's kernel sums"},
			&cli.StringSliceFlag{Name: "measurements", Usage: "cuda_event, kernel_only (GPU and synthetic, default both) or cpu (torch on the CPU)"},
			&cli.StringFlag{Name: "gating-context", Value: "both", Usage: "MoE gating context: prefill_hot, standalone or both"},
			&cli.StringFlag{Name: "routing-path", Value: collect.RoutingStandard, Usage: "MoE routing path: standard_fused_topk, uniform_topk or both"},
			&cli.StringSliceFlag{Name: "load-distributions", Value: collect.LoadDistributions, Usage: "MoE expert load distributions"},
			&cli.StringFlag{Name: "all2all-backend", Value: spec.All2AllAllgatherRS, Usage: "EP dispatch/combine measured on data-parallel layouts (EP > TP): allgather_reducescatter or naive (torch.distributed all_gather + reduce_scatter, or broadcasts + all_reduce), pplx, deepep_high_throughput or deepep_low_latency (timed as torch all_to_all_single, a stand-in: their kernels are not called)"},
			&cli.IntFlag{Name: "warmup", Value: 5, Usage: "untimed runs per operator"},
			&cli.IntFlag{Name: "repeats", Value: 20, Usage: "timed runs per operator"},
			&cli.Uint64Flag{Name: "seed", Value: spec.DefaultSeed, Usage: "seed of MoE routing draws and synthetic noise"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "profiles", Usage: "output root folder"},
			&cli.StringFlag{Name: "shard", Usage: "measure only shard i/n of the plan (shapes at positions i, i+n, ...)"},
			&cli.BoolFlag{Name: "force", Usage: "delete the requested families' rows in the output folder and start over"},
			&cli.IntFlag{Name: "max-failures", Value: 5, Usage: "stop after this many shapes failed in a row"},
			&cli.DurationFlag{Name: "shape-timeout", Value: 5 * time.Minute, Usage: "kill and restart a worker that takes longer than this on one shape"},
			&cli.BoolFlag{Name: "lock-clocks", Usage: "lock GPU SM clocks at their maximum while measuring (needs permission)"},
			&cli.BoolFlag{Name: "force-device", Usage: "accept a --device that does not match the GPU found"},
			&cli.BoolFlag{Name: "plan-only", Usage: "print the plan (shapes, estimated GPU time, coverage) and exit"},
			&cli.StringFlag{Name: "emit", Usage: "write a job file running --shards shards instead of measuring: slurm or k8s"},
			&cli.IntFlag{Name: "shards", Value: 1, Usage: "with --emit: number of shards"},
			&cli.StringFlag{Name: "image", Value: "ftk:latest", Usage: "with --emit k8s: container image"},
			&cli.StringFlag{Name: "binary", Usage: "with --emit: path of the ftk executable on the cluster's nodes (default: this ftk for slurm, ftk from the image's PATH for k8s)"},
		),
		Action: runCollect,
	}
}

func runCollect(ctx context.Context, cmd *cli.Command) error {
	o, err := collectOptions(cmd)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	if cmd.String("emit") != "" {
		return emitCollect(cmd, o)
	}
	if cmd.Bool("plan-only") {
		plan, err := collect.NewPlan(o.Plan)
		if err != nil {
			return err
		}
		dev := o.Device
		if dev == nil {
			dev, _ = spec.LookupDevice("h100")
			fmt.Fprintln(stderr, "collect: no --device given: estimating GPU time for h100")
		}
		meas := o.Measurements
		if len(meas) == 0 {
			meas = []string{spec.CUDAEvent, spec.KernelOnly}
		}
		return collect.WritePlan(stdout, plan, o.Shard.Take(plan.Shapes), dev, meas, o.Warmup, o.Repeats, max(1, len(o.Torch.GPUs)))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Log, o.Bar = stderr, isTerminal(stderr)
	sum, err := collect.Run(ctx, o)
	if sum != nil {
		fmt.Fprintf(stdout, "collect: %d shapes in %s (%s backend): %d measured, %d already there, %d failed, %d re-measured after throttling; %s\n",
			sum.Shapes, sum.Dir, sum.Backend, sum.Measured, sum.Skipped, sum.Failed, sum.Remeasure, sum.Elapsed.Round(time.Millisecond))
	}
	return err
}

// collectOptions turns the flags into sweep options; mistakes are usage
// errors (exit 2).
func collectOptions(cmd *cli.Command) (collect.Options, error) {
	var o collect.Options
	if cmd.Args().Len() == 0 {
		return o, usageError("collect needs a family: linear, attention, moe, collectives, host or all")
	}
	fams, err := collect.ParseFamilies(cmd.Args().Slice())
	if err != nil {
		return o, usageError("%v", err)
	}
	if cmd.String("model") == "" {
		return o, usageError("collect needs --model (a catalog name or a config.json path); see 'ftk models list'")
	}
	m, err := spec.LookupModel(cmd.String("model"))
	if err != nil {
		return o, usageError("--model: %v", err)
	}
	if d := cmd.String("device"); d != "" {
		if o.Device, err = spec.LookupDevice(d); err != nil {
			return o, usageError("--device: %v", err)
		}
	}
	lim, err := resolveEngineLimits(cmd, m)
	if err != nil {
		return o, err
	}
	layouts, err := collectLayouts(m, cmd.IntSlice("tp"), cmd.IntSlice("ep"), cmd.IntSlice("pp"))
	if err != nil {
		return o, err
	}
	o.Plan = collect.PlanConfig{
		Model: m, Layouts: layouts, Families: fams, Seed: cmd.Uint64("seed"),
		Limits:         lim,
		Distributions:  cmd.StringSlice("load-distributions"),
		All2AllBackend: cmd.String("all2all-backend"),
	}
	switch g := cmd.String("gating-context"); g {
	case "both":
		o.Plan.GatingContexts = []string{spec.GatingPrefillHot, spec.GatingStandalone}
	case spec.GatingPrefillHot:
		o.Plan.GatingContexts = []string{spec.GatingPrefillHot}
	case "standalone", spec.GatingStandalone:
		o.Plan.GatingContexts = []string{spec.GatingStandalone}
	default:
		return o, usageError("--gating-context %q: want prefill_hot, standalone or both", g)
	}
	switch r := cmd.String("routing-path"); r {
	case "both":
		o.Plan.RoutingPaths = []string{collect.RoutingStandard, collect.RoutingUniform}
	case collect.RoutingStandard, collect.RoutingUniform:
		o.Plan.RoutingPaths = []string{r}
	default:
		return o, usageError("--routing-path %q: want %s, %s or both", r, collect.RoutingStandard, collect.RoutingUniform)
	}
	for _, s := range cmd.StringSlice("measurements") {
		switch strings.ToLower(s) {
		case "cuda_event":
			o.Measurements = append(o.Measurements, spec.CUDAEvent)
		case "kernel_only":
			o.Measurements = append(o.Measurements, spec.KernelOnly)
		case "cpu":
			o.Measurements = append(o.Measurements, spec.CPUTime)
		default:
			return o, usageError("--measurements %q: want cuda_event, kernel_only or cpu", s)
		}
	}
	if sh := cmd.String("shard"); sh != "" {
		if o.Shard, err = collect.ParseShard(sh); err != nil {
			return o, usageError("--shard: %v", err)
		}
	}
	o.Warmup, o.Repeats = cmd.Int("warmup"), cmd.Int("repeats")
	if o.Warmup < 0 || o.Repeats < 1 {
		return o, usageError("--warmup must be >= 0 and --repeats >= 1")
	}
	o.Out, o.Backend, o.Force = cmd.String("output"), cmd.String("backend"), cmd.Bool("force")
	o.Command = commandLine()
	o.MaxFailures, o.ShapeTimeout, o.Version = cmd.Int("max-failures"), cmd.Duration("shape-timeout"), version
	o.Torch = collect.TorchOptions{
		Python: cmd.String("python"), DeviceKind: cmd.String("device-kind"), GPUs: cmd.IntSlice("gpus"),
		LockClocks: cmd.Bool("lock-clocks"), ForceDevice: cmd.Bool("force-device"), Threads: cmd.Int("threads"),
		Kernels: cmd.String("kernels"), GraphTiming: cmd.Bool("cuda-graph-timing"),
	}
	if _, err := collect.NewPlan(o.Plan); err != nil { // bad limits, distributions: the user's mistake
		return o, usageError("%v", err)
	}
	return o, nil
}

// collectLayouts combines the TP, EP and PP degrees into layouts; EP above
// TP spreads experts over TP x DP ranks with DP = EP / TP.
func collectLayouts(m *spec.Model, tps, eps, pps []int) ([]spec.Layout, error) {
	var out []spec.Layout
	seen := map[spec.Layout]bool{}
	for _, tp := range tps {
		for _, ep := range eps {
			for _, pp := range pps {
				l := spec.Layout{TP: tp, EP: ep, PP: pp, DP: 1}
				if ep > tp && tp > 0 && ep%tp == 0 {
					l.DP = ep / tp
				}
				if err := l.Validate(m); err != nil {
					return nil, usageError("%v", err)
				}
				if l = l.Normalize(); !seen[l] {
					seen[l] = true
					out = append(out, l)
				}
			}
		}
	}
	return out, nil
}

// emitCollect writes a Slurm or Kubernetes job that runs the shards.
func emitCollect(cmd *cli.Command, o collect.Options) error {
	if cmd.IsSet("shard") {
		return usageError("--emit writes a job that runs every shard: drop --shard")
	}
	args := []string{"collect"}
	args = append(args, cmd.Args().Slice()...)
	skip := map[string]bool{"emit": true, "shards": true, "image": true, "plan-only": true, "binary": true}
	for _, f := range cmd.Flags {
		name := f.Names()[0]
		if skip[name] || !cmd.IsSet(name) {
			continue
		}
		switch {
		case isBoolFlag(f):
			args = append(args, "--"+name)
		default:
			args = append(args, "--"+name, flagValue(cmd, f))
		}
	}
	plan, err := collect.NewPlan(o.Plan)
	if err != nil {
		return err
	}
	gpus := 0 // the synthetic backend and the torch worker on the CPU need no GPU
	if o.Backend != collect.BackendSynthetic && o.Torch.DeviceKind != collect.KindCPU {
		gpus = 1
		for _, l := range o.Plan.Layouts {
			gpus = max(gpus, l.TP, l.EP)
			if l.PP > 1 {
				gpus = max(gpus, 2)
			}
		}
		if len(o.Torch.GPUs) > 0 {
			gpus = len(o.Torch.GPUs)
		}
	}
	dev := o.Device
	if dev == nil {
		dev, _ = spec.LookupDevice("h100")
	}
	meas := o.Measurements
	if len(meas) == 0 {
		meas = []string{spec.CUDAEvent, spec.KernelOnly}
	}
	var secs float64
	for _, e := range collect.Estimate(plan.Shapes, o.Plan.Model, dev, meas, o.Warmup, o.Repeats) {
		secs += e.GPUSeconds
	}
	n := cmd.Int("shards")
	bin, err := emitBinary(cmd)
	if err != nil {
		return err
	}
	return jobUsage(batchjob.Write(cmd.Root().Writer, batchjob.Job{
		Kind: cmd.String("emit"), Name: "ftk-collect", Shards: n, Binary: bin, Args: args, GPUs: gpus,
		Image: cmd.String("image"), OutFlag: "--output", Claim: "ftk-profiles",
		Hours: math.Ceil(secs/float64(max(n, 1))/float64(max(gpus, 1))) / 3600,
		Merge: "ftk ingest " + o.Out + " -o DATASET (it merges the shard folders)",
	}))
}

// emitBinary is the ftk executable an emitted job runs: --binary, else
// this executable for Slurm (whose nodes share the file system) and ftk
// from the image's PATH for Kubernetes.
func emitBinary(cmd *cli.Command) (string, error) {
	if b := cmd.String("binary"); b != "" || cmd.String("emit") != batchjob.Slurm {
		return b, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("--emit slurm: cannot find this ftk's path (%v): give --binary", err)
	}
	return exe, nil
}

func isBoolFlag(f cli.Flag) bool {
	_, ok := f.(*cli.BoolFlag)
	return ok
}

// flagValue renders a set flag's value for a command line.
func flagValue(cmd *cli.Command, f cli.Flag) string {
	name := f.Names()[0]
	switch f.(type) {
	case *cli.IntSliceFlag:
		var s []string
		for _, v := range cmd.IntSlice(name) {
			s = append(s, strconv.Itoa(v))
		}
		return strings.Join(s, ",")
	case *cli.StringSliceFlag:
		return strings.Join(cmd.StringSlice(name), ",")
	case *cli.IntFlag:
		return strconv.Itoa(cmd.Int(name))
	case *cli.Uint64Flag:
		return strconv.FormatUint(cmd.Uint64(name), 10)
	case *cli.DurationFlag:
		return cmd.Duration(name).String()
	case *cli.FloatFlag:
		return strconv.FormatFloat(cmd.Float(name), 'g', -1, 64)
	}
	return cmd.String(name)
}

// isTerminal reports whether w is a terminal (for the progress bar).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
