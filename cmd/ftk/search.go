package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/batchjob"
	"github.com/ftk-dev/ftk/progress"
	"github.com/ftk-dev/ftk/search"
	"github.com/ftk-dev/ftk/simulate"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

func searchCommand() *cli.Command {
	return &cli.Command{
		Name:      "search",
		Usage:     "find the deployment with the most goodput per GPU (or the lowest cost) that meets a latency SLO",
		ArgsUsage: " ",
		Description: `search enumerates deployments of MODEL on the GPUs given: every TP / PP / EP
layout (and replica count) that the simulator accepts, co-located or
disaggregated with each prefill:decode instance ratio, each engine limit
(--max-num-seqs, --max-num-batched-tokens) and execution mode. For each it
finds the highest Poisson request rate at which the simulated run keeps its
queue bounded and meets every SLO target (rates on a grid --rate-tolerance
apart), replaying the same requests. Candidates that cannot enter the top
--top are pruned after one simulation. With --cost-per-gpu-hour for every
device the ranking is by cost per output token, else by goodput per GPU.
MoE replicas are generated only as the simulator runs them (EP = 1 or
EP = TP x DP, no PP); --use-all keeps the deployments using every GPU given.

The fixed-rate question, --rate R: only deployments that meet every target
at R req/s (over a probe and a run ten times as long) are ranked, the
cheapest first (fewest GPUs, or lowest price per hour with prices), then by
rate, each with its highest rate, its margin over R and its latencies at R;
the others say the rate they miss. With --use-all every deployment costs
the same: the best rate for the GPUs you own ranks first. --seeds N searches each ranked rate again with N-1 more
workload seeds: the table shows the range, and a ~ marks an answer whose
margin over the next is inside the two ranges. BAND is the largest error of
ftk on the published vLLM runs of the deployment's class (model family,
device, execution mode: docs/validation.md); a ! marks a margin inside it. --vllm-version,
--calibration, --async-scheduling and --moe-routing/--moe-skew/--moe-histogram
are passed to every simulation, as simulate takes them.

Outputs in -o DIR: results.csv (one row per candidate, with the reason a
pruned or rejected one was left out), pareto.png (goodput per GPU against each
SLO latency for the ranked candidates) and candidates/ID/config.yaml (rerun
one with "ftk simulate --config DIR/candidates/ID/config.yaml"); the ranking
goes to stdout. Each candidate's result is written as it is found: a killed
search continues where it stopped when run again. --shard i/n searches one
part into DIR, --emit slurm|k8s writes a job array of --shards parts, and the
same command without --shard merges them.

Examples:
  ftk search --model llama-3.1-8b --workload splitwise-conv --gpus h100:2 --slo ttft_p95_ms=500,tpot_p95_ms=30 --max-num-seqs 128,256 --max-num-batched-tokens 2048,8192 --execution-modes cuda-graph --num-requests 1000 -o search-out
  ftk search --model qwen3-30b-a3b --trace testdata/traces/splitwise_code.csv --num-requests 200 --gpus h100:8,h200:8 --cost-per-gpu-hour h100=2.5,h200=3.5 --slo ttft_p95_ms=1000,tpot_p95_ms=50 --max-num-seqs 256 --max-num-batched-tokens 8192 --execution-modes cuda-graph -o qwen
  ftk search --model qwen3-30b-a3b --workload splitwise-conv --num-requests 300 --gpus h100:8 --rate 10 --slo tpot_p95_ms=50 --modes colocated --tp 1 --pp 1 --max-num-seqs 256 --max-num-batched-tokens 8192 --execution-modes cuda-graph -o qwen-cheapest
  ftk search --model llama-3.1-8b --workload fixed:1024x256 --gpus h100:8 --slo ttft_p95_ms=300,tpot_p95_ms=25 --emit slurm --shards 8 -o /shared/search > search.sbatch`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "model: catalog name or config.json path (required)"},
			&cli.StringFlag{Name: "workload", Usage: "generated workload: fixed:PROMPTxOUTPUT, splitwise-conv, splitwise-code, arxiv-summarization or trace:PATH"},
			&cli.StringFlag{Name: "trace", Usage: "trace CSV whose requests are replayed (its recorded arrivals scaled to each rate tried, or Poisson arrivals when it has none)"},
			&cli.IntFlag{Name: "num-requests", Value: 2000, Usage: "requests per simulation (the first of --trace)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the generated requests and arrivals"},
			&cli.StringFlag{Name: "gpus", Usage: "GPUs a deployment may use, DEVICE:COUNT,... e.g. h100:8,h200:8 (required)"},
			&cli.StringFlag{Name: "slo", Usage: "latency targets METRIC_pNN_ms=LIMIT,... (ttft, tpot, e2e; p50, p90, p95, p99), e.g. ttft_p95_ms=500,tpot_p95_ms=50 (required)"},
			&cli.StringFlag{Name: "cost-per-gpu-hour", Usage: "price of one GPU for an hour per device, e.g. h100=2.5,h200=3.5: rank by cost per output token"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "search-out", Usage: "output folder"},
			&cli.StringFlag{Name: "bundle", Usage: "operator times from a fit model bundle or kernel tables (an AIConfigurator database or ftk ingest's copy, at --vllm-version) of the one --gpus device (default: the built-in roofline)"},
			&cli.IntSliceFlag{Name: "tp", Usage: "tensor-parallel degrees to try (default: powers of two up to the GPUs)"},
			&cli.IntSliceFlag{Name: "pp", Usage: "pipeline-parallel degrees to try (default: powers of two up to the GPUs)"},
			&cli.IntSliceFlag{Name: "ep", Usage: "expert-parallel degrees to try (default: powers of two up to TP, MoE models)"},
			&cli.IntSliceFlag{Name: "max-num-seqs", Value: []int{64, 128, 256, 512}, Usage: "engine limits on running sequences to try"},
			&cli.IntSliceFlag{Name: "max-num-batched-tokens", Value: []int{2048, 4096, 8192, 16384}, Usage: "engine token budgets per step to try"},
			&cli.IntFlag{Name: "max-model-len", Usage: "longest request served (0: min(model's maximum, 8192)); a deployment that rejects requests is rejected"},
			&cli.StringSliceFlag{Name: "execution-modes", Value: []string{runresult.ExecCUDAGraph, runresult.ExecEager}, Usage: "execution modes to try: cuda-graph, eager, piecewise"},
			&cli.BoolFlag{Name: "use-all", Usage: "only deployments that use every GPU of their --gpus pool"},
			&cli.StringSliceFlag{Name: "modes", Value: []string{runresult.ModeColocated, runresult.ModeDisaggregated}, Usage: "serving modes to try: colocated, disaggregated"},
			&cli.FloatFlag{Name: "rate", Aliases: []string{"request-rate"}, Usage: "the fixed-rate question: rank only deployments that meet the SLO at this many requests/s (over a probe and a run ten times as long), the cheapest first (fewest GPUs, or lowest price per hour), then by rate, each with its highest rate and its margin over this one"},
			&cli.IntFlag{Name: "seeds", Value: 1, Usage: "search each ranked deployment's rate with this many workload seeds (--seed and the next ones): its spread, and a ~ on answers whose margin over the next is inside it"},
			&cli.StringFlag{Name: "vllm-version", Usage: "vLLM release simulated, e.g. 0.14.0: its kernel tables (with --bundle of kernel tables), engine defaults and built-in kernels (as simulate)"},
			&cli.StringFlag{Name: "calibration", Usage: "calibration YAML from 'ftk validate calibrate' applied to every simulation (as simulate)"},
			&cli.BoolFlag{Name: "async-scheduling", Usage: "overlap each step's host work with the GPU work of the step before (vLLM --async-scheduling; default as --vllm-version says)"},
			&cli.StringFlag{Name: "moe-routing", Usage: "MoE routing: skewed, uniform, replay (--moe-histogram) or even (as simulate)"},
			&cli.FloatFlag{Name: "moe-skew", Usage: "Zipf exponent of skewed MoE routing (as simulate)"},
			&cli.StringFlag{Name: "moe-histogram", Usage: "per-layer expert histogram CSV that replay routing follows (as simulate)"},
			&cli.IntFlag{Name: "top", Value: 10, Usage: "rank this many; the others are pruned once they cannot enter the top"},
			&cli.FloatFlag{Name: "rate-tolerance", Value: 0.02, Usage: "neighbouring rates tried differ by this factor (0.02: 2%)"},
			&cli.IntFlag{Name: "workers", Usage: "candidates searched in parallel (0: one per CPU)"},
			&cli.StringFlag{Name: "shard", Usage: "search only part i/n of the candidates (a job array task); the same command without --shard merges"},
			&cli.StringFlag{Name: "emit", Usage: "write a job file running --shards shards instead of searching: slurm or k8s"},
			&cli.IntFlag{Name: "shards", Value: 1, Usage: "with --emit: number of shards"},
			&cli.StringFlag{Name: "image", Value: "ftk:latest", Usage: "with --emit k8s: container image"},
			&cli.StringFlag{Name: "binary", Usage: "with --emit: path of the ftk executable on the cluster's nodes (default: this ftk for slurm, ftk from the image's PATH for k8s)"},
		},
		Action: runSearch,
	}
}

// searchSettings turns the flags into the search's settings.
func searchSettings(cmd *cli.Command) (search.Settings, error) {
	var s search.Settings
	if cmd.Args().Len() > 0 {
		return s, usageError("search takes no arguments, got %q (see 'ftk search --help')", cmd.Args().Slice())
	}
	for _, f := range []string{"model", "gpus", "slo"} {
		if cmd.String(f) == "" {
			return s, usageError("search needs --%s (see 'ftk search --help')", f)
		}
	}
	m, err := spec.LookupModel(cmd.String("model"))
	if err != nil {
		return s, usageError("--model: %v", err)
	}
	pools, err := search.ParsePools(cmd.String("gpus"), cmd.String("cost-per-gpu-hour"))
	if err != nil {
		return s, usageError("%v", err)
	}
	if s.SLO, err = search.ParseSLO(cmd.String("slo")); err != nil {
		return s, usageError("--slo: %v", err)
	}
	base := runresult.DefaultConfig()
	base.Model = cmd.String("model")
	base.Bundle = cmd.String("bundle")
	base.Engine.MaxModelLen = cmd.Int("max-model-len")
	if err := searchSimOptions(cmd, &base); err != nil {
		return s, err
	}
	w := &base.Workload
	w.Workload, w.Trace, w.NumRequests, w.Seed = cmd.String("workload"), cmd.String("trace"), cmd.Int("num-requests"), cmd.Uint64("seed")
	switch {
	case (w.Workload == "") == (w.Trace == ""):
		return s, usageError("search needs --workload W or --trace FILE (one of them)")
	case w.NumRequests < 8:
		return s, usageError("--num-requests must be at least 8, got %d", w.NumRequests)
	case base.Bundle != "" && len(pools) > 1:
		return s, usageError("--bundle is profiled on one device: give one --gpus pool with it")
	case cmd.Int("top") < 1:
		return s, usageError("--top must be at least 1, got %d", cmd.Int("top"))
	}
	s.Space = search.Space{Model: m, Pools: pools, TP: cmd.IntSlice("tp"), PP: cmd.IntSlice("pp"), EP: cmd.IntSlice("ep"),
		MaxNumSeqs: cmd.IntSlice("max-num-seqs"), MaxNumBatchedTokens: cmd.IntSlice("max-num-batched-tokens"),
		ExecutionModes: cmd.StringSlice("execution-modes"), Modes: cmd.StringSlice("modes"), UseAll: cmd.Bool("use-all")}
	s.Base, s.RateTolerance, s.TopK = base, cmd.Float("rate-tolerance"), cmd.Int("top")
	if !(s.RateTolerance > 0 && s.RateTolerance < 1) {
		return s, usageError("--rate-tolerance must be in (0, 1), got %g", s.RateTolerance)
	}
	if cmd.IsSet("rate") {
		if s.RateRPS = cmd.Float("rate"); !(s.RateRPS >= 1e-6) || math.IsInf(s.RateRPS, 1) {
			return s, usageError("--rate must be a number of requests per second of at least 1e-6, got %g", s.RateRPS)
		}
	}
	s.VersionAsync = base.VLLMVersion != "" && !cmd.IsSet("async-scheduling")
	if s.Seeds = cmd.Int("seeds"); s.Seeds < 1 {
		return s, usageError("--seeds must be at least 1, got %d", s.Seeds)
	}
	return s, nil
}

// searchSimOptions passes the simulate options that change a search's
// answer to every simulation: the vLLM release (its engine defaults; the
// execution mode is the candidate's), a calibration, async scheduling and
// MoE routing.
func searchSimOptions(cmd *cli.Command, base *runresult.Config) error {
	base.VLLMVersion = cmd.String("vllm-version")
	if cmd.IsSet("async-scheduling") {
		base.Engine.AsyncScheduling = cmd.Bool("async-scheduling")
	}
	if err := base.ApplyVLLMDefaults(true, cmd.IsSet("async-scheduling")); err != nil {
		return usageError("--vllm-version: %v", err)
	}
	if cmd.IsSet("moe-routing") {
		base.MoE.Routing = cmd.String("moe-routing")
	}
	if cmd.IsSet("moe-skew") {
		base.MoE.Skew = cmd.Float("moe-skew")
	}
	base.MoE.Histogram = cmd.String("moe-histogram")
	if p := cmd.String("calibration"); p != "" {
		c, err := runresult.LoadCalibration(p)
		if err != nil {
			return err
		}
		base.Calibration = c
	}
	return nil
}

func runSearch(ctx context.Context, cmd *cli.Command) error {
	s, err := searchSettings(cmd)
	if err != nil {
		return err
	}
	if cmd.String("emit") != "" {
		return emitSearch(cmd)
	}
	o := search.Options{Dir: cmd.String("output"), Workers: cmd.Int("workers"), Sim: simulate.Options{RoutingTables: cost.NewRoutingTables(0)}}
	if sh := cmd.String("shard"); sh != "" {
		if o.Shard, err = batchjob.ParseShard(sh); err != nil {
			return usageError("--shard: %v", err)
		}
	}
	if s.Base.Bundle != "" {
		d, _ := spec.LookupDevice(s.Space.Pools[0].Device)
		if o.Sim.Predictors, err = cost.LoadPredictors(s.Base.Bundle, s.Base.VLLMVersion, s.Space.Model, d); err != nil {
			return err
		}
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	bar := &searchProgress{w: stderr}
	o.Progress = bar.update
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	t0 := time.Now()
	out, err := search.Run(ctx, s, o)
	bar.bar.Close(err == nil)
	if err != nil {
		return err
	}
	probes := 0
	for _, r := range out.Results {
		probes += r.Probes
	}
	fmt.Fprintf(stderr, "search: %d candidates (%d already searched in %s), %d simulations of %d requests in %s\n",
		out.Candidates, out.Resumed, o.Dir, probes, s.Base.Workload.NumRequests, time.Since(t0).Round(time.Millisecond))
	if !o.Shard.Whole() {
		fmt.Fprintf(stdout, "shard %s: %d candidates searched into %s; when every shard is done, run the same command without --shard to merge\n", o.Shard, out.Candidates, o.Dir)
		return nil
	}
	rep, err := search.NewReport(s, out.Results)
	if err != nil {
		return err
	}
	if err := rep.WriteFiles(o.Dir, o.Sim, o.Workers); err != nil {
		return err
	}
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	best := ""
	if len(rep.Ranked) > 0 {
		best = fmt.Sprintf("; rerun the best: ftk simulate --config %s", filepath.Join(o.Dir, "candidates", rep.Ranked[0].ID, "config.yaml"))
	}
	_, err = fmt.Fprintf(stdout, "outputs in %s: %s, %s, candidates/ID/config.yaml%s\n", o.Dir, search.ResultsFile, search.ParetoFile, best)
	return err
}

// emitSearch writes a Slurm or Kubernetes job that runs the shards.
func emitSearch(cmd *cli.Command) error {
	if cmd.IsSet("shard") {
		return usageError("--emit writes a job that runs every shard: drop --shard")
	}
	args := []string{"search"}
	skip := map[string]bool{"emit": true, "shards": true, "image": true, "binary": true}
	for _, f := range cmd.Flags {
		name := f.Names()[0]
		if skip[name] || !cmd.IsSet(name) {
			continue
		}
		if isBoolFlag(f) {
			args = append(args, "--"+name)
		} else {
			args = append(args, "--"+name, flagValue(cmd, f))
		}
	}
	bin, err := emitBinary(cmd)
	if err != nil {
		return err
	}
	merge := batchjob.ShellJoin(append([]string{cmp.Or(bin, "ftk")}, args...))
	return jobUsage(batchjob.Write(cmd.Root().Writer, batchjob.Job{
		Kind: cmd.String("emit"), Name: "ftk-search", Shards: cmd.Int("shards"), Binary: bin, Args: args,
		// Hours is a guess: a shard of a few hundred candidates takes minutes.
		Image: cmd.String("image"), OutFlag: "--output", Claim: "ftk-search", Hours: 1,
		Merge: merge + " (the same command without --shard)",
	}))
}

// searchProgress draws the candidates done as a bar on a terminal, and
// elsewhere (a log file, a pipe, a batch job) writes a line at every
// progressStep of them; the bar is made at the first report, when the
// total is known.
type searchProgress struct {
	w       io.Writer
	bar     *progress.Bar
	started bool
	t0      time.Time
	logged  int // progressSteps already logged
}

// progressSteps is how many log lines a search writes off a terminal.
const progressSteps = 20

// update is search.Options.Progress (called under the search's lock).
func (s *searchProgress) update(done, total int) {
	if !s.started {
		s.started, s.t0 = true, time.Now()
		s.bar = progress.New(s.w, "search", "candidates", total)
	}
	if s.bar != nil {
		s.bar.Set(done)
		return
	}
	step := done * progressSteps / max(total, 1)
	if step <= s.logged {
		return
	}
	s.logged = step
	el := time.Since(s.t0)
	eta := ""
	if done < total {
		eta = fmt.Sprintf(", about %s to go", (el * time.Duration(total-done) / time.Duration(done)).Round(time.Second))
	}
	fmt.Fprintf(s.w, "search: %d/%d candidates (%d%%) in %s%s\n", done, total, 100*done/max(total, 1), el.Round(time.Second), eta)
}
