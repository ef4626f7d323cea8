package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/progress"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

func simulateCommand() *cli.Command {
	def := runresult.DefaultConfig()
	layout := layoutFlags()
	for _, f := range layout {
		if f, ok := f.(*cli.IntFlag); ok && f.Name == "dp" {
			f.Aliases = append(f.Aliases, "replicas")
			f.Usage = "data-parallel degree: engine replicas behind the router"
		}
	}
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "YAML config with every setting (a run's config.yaml); flags override it"},
		&cli.StringFlag{Name: "model", Usage: "model: catalog name or config.json path (see 'ftk models list')"},
		&cli.StringFlag{Name: "device", Value: def.Device, Usage: "device (see 'ftk devices list')"},
		&cli.StringFlag{Name: "trace", Usage: "trace CSV (arrived_at, num_prefill_tokens, num_decode_tokens) to replay"},
		&cli.StringFlag{Name: "workload", Usage: "generated workload: fixed:PROMPTxOUTPUT, splitwise-conv, splitwise-code, arxiv-summarization or trace:PATH"},
		&cli.FloatFlag{Name: "rate", Aliases: []string{"request-rate"}, Usage: "Poisson arrival rate of --workload in requests/s (without it every request arrives at time 0, an offline batch, said on stderr and in the summary; --rate 0 is refused); for --trace, rescale its arrivals to this rate (0: as recorded, or all at time 0 when the trace has no times)"},
		&cli.IntFlag{Name: "num-requests", Aliases: []string{"num-prompts"}, Usage: "requests to generate, or the first requests of --trace to replay (0: the whole trace)"},
		&cli.Uint64Flag{Name: "seed", Value: def.Workload.Seed, Usage: "seed of the generated workload"},
		&cli.StringFlag{Name: "stages", Usage: "Poisson arrivals whose rate changes over time instead of --rate: DURATIONs@RATE,..., e.g. 60s@2,120s@8 (the last rate holds after its stage)"},
		&cli.IntFlag{Name: "clients", Aliases: []string{"max-concurrency"}, Usage: "closed loop: N clients, each waiting for its reply before sending again (vllm bench serve --max-concurrency N); sessions:... workloads run turn by turn; --rate or --stages then pace session starts (default: back to back)"},
		&cli.FloatFlag{Name: "think-time", Usage: "closed loop: clients' mean think time between a reply and the session's next turn, seconds (exponential)"},
		&cli.StringFlag{Name: "bundle", Usage: "fit model bundle, or kernel tables (an AIConfigurator <gpu> folder or 'ftk ingest' of one), for operator times (default: the built-in roofline device model)"},
		&cli.StringFlag{Name: "vllm-version", Usage: "vLLM release simulated, e.g. 0.14.0: its kernel tables (with --bundle of kernel tables), engine defaults (docs/design.md) and the kernels the built-in model prices (docs/device-model.md)"},
		&cli.StringFlag{Name: "calibration", Usage: "calibration YAML (host_scale, host_speed, issue_scale, family_scale; host_ms_per_step by hand) from 'ftk validate calibrate'"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "sim-out", Usage: "directory for requests.csv, requests.arrow, summary.json, config.yaml"},
		&cli.StringFlag{Name: "save-result", Usage: "also write the run's metrics to this JSON file under vllm bench serve --save-result's field names (mean/median/std/p50/p90/p95/p99 of ttft, tpot, itl, e2el in ms, throughputs, token counts), to diff against a benchmark"},
		&cli.StringFlag{Name: "chrome-trace", Usage: "write a Chrome trace (chrome://tracing, Perfetto) of the run to this file"},
		&cli.FloatFlag{Name: "gpu-memory-utilization", Value: def.Engine.GPUMemoryUtilization, Usage: "share of GPU memory for weights, activations and KV cache"},
		&cli.IntFlag{Name: "long-prefill-token-threshold", Usage: "most prompt tokens one request schedules per step (0: no limit)"},
		&cli.BoolWithInverseFlag{Name: "enable-chunked-prefill", Value: def.Engine.EnableChunkedPrefill, Usage: "split long prompts over steps, as vLLM V1 does by default (--no-enable-chunked-prefill to turn off)"},
		&cli.BoolWithInverseFlag{Name: "enable-prefix-caching", Value: def.Engine.EnablePrefixCaching, Usage: "reuse the KV blocks of prompt prefixes already computed, as vLLM V1 does by default (--no-enable-prefix-caching to turn off; disaggregated: on the prefill instances)"},
		&cli.IntFlag{Name: "num-gpu-blocks-override", Usage: "KV-cache blocks per replica instead of those that fit in memory"},
		&cli.FloatFlag{Name: "kv-offloading-size", Usage: "GiB of host memory per replica (all its GPUs together) for a host tier of KV blocks, as vLLM's --kv-offloading-size with the native backend: blocks are copied to the host as they are computed and a prefix found there loads over the host link instead of being recomputed (docs/kv-offloading.md); 0: none"},
		&cli.StringFlag{Name: "kv-offloading-backend", Value: "native", Usage: "vLLM's --kv-offloading-backend: native (the only one modelled; lmcache is refused, docs/kv-offloading.md says how it differs)"},
		&cli.StringFlag{Name: "router", Value: def.Router, Usage: "how requests spread over replicas (or prefill and decode instances): round-robin or least-loaded"},
		&cli.BoolFlag{Name: "enforce-eager", Usage: "vLLM's --enforce-eager: the same as --execution-mode eager"},
		&cli.StringFlag{Name: "execution-mode", Usage: "how the host issues the forward pass: eager (every op issued from Python), cuda-graph (decode-only batches replay a graph) piecewise (graphs between eagerly issued attention ops) or full-and-piecewise (vLLM's default since 0.11: full graphs for decode-only batches, piecewise for the rest); default cuda-graph (full-and-piecewise or piecewise as --vllm-version says), or eager with a CUDA_EVENT bundle"},
		&cli.IntFlag{Name: "max-cudagraph-capture-size", Aliases: []string{"cuda-graph-max-batch"}, Usage: "largest batch replayed as a CUDA graph (0: min(2 x max-num-seqs, 512), as vLLM)"},
		&cli.BoolFlag{Name: "async-scheduling", Usage: "overlap each step's host work with the GPU work of the step before (vLLM --async-scheduling)"},
		&cli.StringFlag{Name: "kv-cache-dtype", Usage: "KV cache element type (vLLM --kv-cache-dtype): auto (the model's), bfloat16, fp8, fp8_e4m3, fp8_e5m2; fp8 halves KV bytes per token"},
		&cli.StringFlag{Name: "host-bundle", Usage: "fit bundle of HOST_WALL predictors (a CPU-overhead profile) for the host time of a step (default: the documented default host model of the device class)"},
		&cli.StringFlag{Name: "moe-routing", Usage: "MoE routing: skewed (Zipf, see --moe-skew; default, at exponent 0.2, a guess), uniform, replay (--moe-histogram) or even (no imbalance)"},
		&cli.FloatFlag{Name: "moe-skew", Usage: "Zipf exponent of skewed routing (default 0.2, a guess, with or without --moe-routing skewed; the summary prints it)"},
		&cli.StringFlag{Name: "moe-histogram", Usage: "per-layer expert histogram CSV (layer,expert,tokens) that replay routing follows"},
		&cli.Uint64Flag{Name: "moe-seed", Usage: "seed of the MoE routing draws"},
		&cli.StringFlag{Name: "all2all-backend", Usage: "EP dispatch and combine of a data-parallel MoE layout (--dp > 1), vLLM's names: allgather_reducescatter (default, as vLLM v0.11+), naive (broadcasts, the v0.10 default), pplx, deepep_high_throughput or deepep_low_latency (all-to-all kernels, need --ep > 1); at DP=1 vLLM exchanges nothing"},
		&cli.BoolFlag{Name: "breakdown", Usage: "print the share of step time per component (device ops, host issue, host) and per op the host issue vs GPU time after the summary"},
		&cli.StringFlag{Name: "mode", Usage: "colocated (default) or disaggregated (prefill and decode instances)"},
		&cli.IntFlag{Name: "prefill-instances", Usage: "disaggregated: prefill instances (default 1)"},
		&cli.IntFlag{Name: "decode-instances", Usage: "disaggregated: decode instances (default 1)"},
		&cli.IntFlag{Name: "prefill-tp", Usage: "disaggregated: TP of a prefill instance (default --tp)"},
		&cli.IntFlag{Name: "prefill-pp", Usage: "disaggregated: PP of a prefill instance (default --pp)"},
		&cli.IntFlag{Name: "prefill-ep", Usage: "disaggregated: EP of a prefill instance (default --ep)"},
		&cli.IntFlag{Name: "decode-tp", Usage: "disaggregated: TP of a decode instance (default --tp)"},
		&cli.IntFlag{Name: "decode-pp", Usage: "disaggregated: PP of a decode instance (default --pp)"},
		&cli.IntFlag{Name: "decode-ep", Usage: "disaggregated: EP of a decode instance (default --ep)"},
		&cli.FloatFlag{Name: "kv-link-gbps", Usage: "disaggregated: KV link bandwidth of each prefill instance, GB/s (default 50 GB/s per GPU of the instance)"},
		&cli.FloatFlag{Name: "kv-link-latency-us", Usage: "disaggregated: fixed cost of one KV transfer, microseconds (default 50)"},
	}, append(append(engineLimitFlags(""), layout...), speculativeFlags()...)...)
	return &cli.Command{
		Name:      "simulate",
		Usage:     "simulate vLLM V1 serving of a trace or workload and report latency and throughput",
		ArgsUsage: " ",
		Description: `Replays requests against engine replicas with vLLM V1 scheduling (token budget,
max sequences, chunked prefill, paged KV cache, preemption by recompute) and
tensor / pipeline / data / expert parallelism, or against prefill and decode
instances with KV-cache transfers between them (--mode disaggregated). Step
times come from a fit bundle or, without one, from the built-in roofline
device model (labelled as such). The forward pass runs on two timelines: the
host issues every op (what vLLM issues per op, priced per kernel kind and
module call, as the execution mode has it: eager, one CUDA graph replay, or
piecewise graphs with eager attention) while the GPU runs them; around it
comes the host time of a step (a CPU-overhead profile, a calibration, or the
default host model of the device class; the summary says which). MoE layers
draw per-expert token counts every step and wait for the slowest EP rank.

Outputs in -o DIR: requests.csv and requests.arrow (one row per request, in
completion order), summary.json (metrics and the full config) and config.yaml
(rerun with --config DIR/config.yaml). The summary table goes to stdout.

Prefix caching is on, as in vLLM V1: full KV blocks are cached under hashes
chained from the first block and evicted least recently used; a request
finds its longest cached prefix and prefills only the rest. Shared content
comes from the workload (shared-prefix:..., sessions:...) or trace columns
(session_id, prefix_hash + prefix_tokens, Mooncake hash_ids; see 'ftk
datasets --help'). With --clients the requests come from closed-loop
clients that wait for each reply.

Speculative decoding (--speculative-method or vLLM's --speculative-config):
each step the target verifies every running request's last token and K
drafts in one pass, accepts a prefix of them drawn from per-position
acceptance rates (a built-in record with its source, or
--speculative-acceptance), and the drafter (EAGLE, EAGLE-3 or MTP head,
draft model: priced from its own operators; n-gram: host time) proposes K
more; drafts count against the token budget and hold KV slots. The summary
reports vLLM's acceptance metrics (docs/speculative.md).

Examples:
  ftk simulate --model llama-3.1-8b --device h100 --trace testdata/traces/splitwise_conv.csv -o out
  ftk simulate --model llama-3.3-70b --tp 4 --workload fixed:1024x256 --rate 4 --num-requests 500 --seed 1
  ftk simulate --config out/config.yaml -o out2 --chrome-trace out2/trace.json
  ftk simulate --model qwen3-30b-a3b --tp 8 --ep 8 --execution-mode eager --breakdown --workload fixed:1024x256 --rate 4 --num-requests 300
  ftk simulate --model llama-3.1-8b --mode disaggregated --prefill-instances 1 --decode-instances 2 --kv-link-gbps 25 --workload splitwise-conv --rate 5 --num-requests 1000
  ftk simulate --model llama-3.1-8b --workload shared-prefix:groups=8,users=50,system=2000,question=200,output=64 --rate 6 --num-requests 400 --no-enable-prefix-caching
  ftk simulate --model llama-3.1-8b --workload sessions:groups=16,users=4,system=1024,turns=8,question=128,output=128 --clients 64 --think-time 1 --num-requests 5000
  ftk simulate --model llama-3.1-8b --workload sessions:groups=8,users=64,system=2000,turns=10,question=200,output=200 --clients 128 --think-time 10 --num-requests 2000 --kv-offloading-size 64
  ftk simulate --model llama-3.1-8b --workload splitwise-conv --stages 60s@2,60s@12,60s@4 --num-requests 2000
  ftk simulate --model deepseek-v3 --device h200 --tp 8 --speculative-config '{"method": "deepseek_mtp", "num_speculative_tokens": 1}' --workload fixed:1024x256 --rate 2 --num-requests 100
  ftk simulate --model llama-3.1-8b --speculative-method eagle3 --num-speculative-tokens 3 --speculative-acceptance 0.73,0.52,0.35 --workload fixed:512x128 --rate 4 --num-requests 200`,
		Flags:  flags,
		Action: runSimulate,
	}
}

// simConfig merges the defaults, --config and the flags set.
func simConfig(cmd *cli.Command) (runresult.Config, error) {
	cfg := runresult.DefaultConfig()
	if p := cmd.String("config"); p != "" {
		var err error
		if cfg, err = runresult.LoadConfig(p); err != nil {
			return cfg, usageError("%v", err)
		}
	}
	set := func(name string, apply func()) {
		if cmd.IsSet(name) {
			apply()
		}
	}
	e, w := &cfg.Engine, &cfg.Workload
	set("model", func() { cfg.Model = cmd.String("model") })
	set("device", func() { cfg.Device = cmd.String("device") })
	set("tp", func() { cfg.Layout.TP = cmd.Int("tp") })
	set("pp", func() { cfg.Layout.PP = cmd.Int("pp") })
	set("ep", func() { cfg.Layout.EP = cmd.Int("ep") })
	set("dp", func() { cfg.Layout.DP = cmd.Int("dp") })
	if err := expertParallel(cmd, &cfg.Layout); err != nil {
		return cfg, err
	}
	set("router", func() { cfg.Router = cmd.String("router") })
	set("bundle", func() { cfg.Bundle = cmd.String("bundle") })
	set("vllm-version", func() { cfg.VLLMVersion = cmd.String("vllm-version") })
	set("trace", func() { w.Trace, w.Workload = cmd.String("trace"), "" })
	set("workload", func() { w.Workload, w.Trace = cmd.String("workload"), "" })
	set("rate", func() { w.RatePerS = cmd.Float("rate") })
	if math.IsInf(w.RatePerS, 1) { // vllm bench serve's default: every request at t=0
		w.RatePerS = 0
	}
	set("num-requests", func() { w.NumRequests = cmd.Int("num-requests") })
	set("seed", func() { w.Seed = cmd.Uint64("seed") })
	set("stages", func() { w.Stages = cmd.String("stages") })
	set("clients", func() { w.Clients = cmd.Int("clients") })
	set("think-time", func() { w.ThinkS = cmd.Float("think-time") })
	setEngineLimits(cmd, &e.EngineLimits)
	set("gpu-memory-utilization", func() { e.GPUMemoryUtilization = cmd.Float("gpu-memory-utilization") })
	set("long-prefill-token-threshold", func() { e.LongPrefillTokenThreshold = cmd.Int("long-prefill-token-threshold") })
	set("enable-chunked-prefill", func() { e.EnableChunkedPrefill = cmd.Bool("enable-chunked-prefill") })
	set("enable-prefix-caching", func() { e.EnablePrefixCaching = cmd.Bool("enable-prefix-caching") })
	set("num-gpu-blocks-override", func() { e.NumGPUBlocksOverride = cmd.Int("num-gpu-blocks-override") })
	set("kv-offloading-size", func() { e.KVOffloadingSize = cmd.Float("kv-offloading-size") })
	if b := cmd.String("kv-offloading-backend"); b != "native" {
		return cfg, usageError("simulate: --kv-offloading-backend %s is not modelled: ftk simulates vLLM's native CPU offloading (native); docs/kv-offloading.md says how LMCache differs", b)
	}
	set("execution-mode", func() { e.ExecutionMode = cmd.String("execution-mode") })
	if cmd.Bool("enforce-eager") {
		if cmd.IsSet("execution-mode") && e.ExecutionMode != runresult.ExecEager {
			return cfg, usageError("simulate: --enforce-eager runs eager, but --execution-mode is %s: give one of them", e.ExecutionMode)
		}
		e.ExecutionMode = runresult.ExecEager
	}
	set("max-cudagraph-capture-size", func() { e.MaxCUDAGraphCaptureSize = cmd.Int("max-cudagraph-capture-size") })
	set("async-scheduling", func() { e.AsyncScheduling = cmd.Bool("async-scheduling") })
	set("kv-cache-dtype", func() { e.KVCacheDtype = cmd.String("kv-cache-dtype") })
	if err := setSpeculative(cmd, e); err != nil {
		return cfg, err
	}
	if cmd.IsSet("vllm-version") {
		if err := cfg.ApplyVLLMDefaults(cmd.IsSet("execution-mode"), cmd.IsSet("async-scheduling")); err != nil {
			return cfg, usageError("--vllm-version: %v", err)
		}
	}
	set("host-bundle", func() { cfg.HostBundle = cmd.String("host-bundle") })
	mo := &cfg.MoE
	set("moe-routing", func() { mo.Routing = cmd.String("moe-routing") })
	set("moe-skew", func() { mo.Skew = cmd.Float("moe-skew") })
	set("moe-histogram", func() { mo.Histogram = cmd.String("moe-histogram") })
	set("moe-seed", func() { mo.Seed = cmd.Uint64("moe-seed") })
	set("all2all-backend", func() { mo.All2AllBackend = cmd.String("all2all-backend") })
	set("mode", func() { cfg.Mode = cmd.String("mode") })
	dc := &cfg.Disaggregation
	set("prefill-instances", func() { dc.PrefillInstances = cmd.Int("prefill-instances") })
	set("decode-instances", func() { dc.DecodeInstances = cmd.Int("decode-instances") })
	set("kv-link-gbps", func() { dc.KVLinkGBps = cmd.Float("kv-link-gbps") })
	set("kv-link-latency-us", func() { dc.KVLinkLatencyUs = cmd.Float("kv-link-latency-us") })
	for _, r := range []struct {
		prefix string
		l      *spec.Layout
	}{{"prefill", &dc.PrefillLayout}, {"decode", &dc.DecodeLayout}} {
		if !cmd.IsSet(r.prefix+"-tp") && !cmd.IsSet(r.prefix+"-pp") && !cmd.IsSet(r.prefix+"-ep") {
			continue
		}
		if *r.l == (spec.Layout{}) {
			*r.l = cfg.Layout
			r.l.DP = 1
		}
		set(r.prefix+"-tp", func() { r.l.TP = cmd.Int(r.prefix + "-tp") })
		set(r.prefix+"-pp", func() { r.l.PP = cmd.Int(r.prefix + "-pp") })
		set(r.prefix+"-ep", func() { r.l.EP = cmd.Int(r.prefix + "-ep") })
	}
	if cmd.IsSet("stages") && cmd.IsSet("rate") && cmd.Float("rate") != 0 {
		return cfg, usageError("simulate: give a rate or rate stages, not both: --stages gives the rates, so drop --rate")
	}
	if cmd.IsSet("trace") && cmd.IsSet("workload") {
		return cfg, usageError("simulate: give --trace or --workload, not both")
	}
	if p := cmd.String("calibration"); p != "" {
		c, err := runresult.LoadCalibration(p)
		if err != nil {
			return cfg, err
		}
		cfg.Calibration = c
	}
	return cfg, nil
}

// simUsage turns the errors of a missing setting, which simulate.Resolve
// and datasets.RunArrivals.Open report, into usage errors in the command
// line's words.
func simUsage(err error) error {
	switch {
	case errors.Is(err, runresult.ErrNoModel):
		return usageError("simulate needs --model (or a --config that names one)")
	case errors.Is(err, datasets.ErrNoArrivals):
		return usageError("simulate needs --trace FILE or --workload W (or a --config that names one)")
	}
	return err
}

func runSimulate(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return usageError("simulate takes no arguments, got %q (see 'ftk simulate --help')", cmd.Args().Slice())
	}
	cfg, err := simConfig(cmd)
	if err != nil {
		return err
	}
	if m, err := spec.LookupModel(cfg.Model); err == nil { // limits the model refuses are usage errors
		if _, err := cfg.Engine.EngineLimits.Resolve(m); err != nil {
			return usageError("simulate: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		if errors.Is(err, runresult.ErrNoModel) {
			return simUsage(err)
		}
		return usageError("%v", err) // flags or --config out of range
	}
	var opts simulate.Options
	res, err := simulate.Resolve(cfg, opts)
	if err != nil {
		return simUsage(err)
	}
	wl := &cfg.Workload
	if cmd.IsSet("rate") && cmd.Float("rate") == 0 && wl.Workload != "" && wl.Clients == 0 && wl.Stages == "" {
		return usageError("simulate: --rate 0 with --workload sends nothing at 0 requests/s: omit --rate to send every request at t=0 (an offline batch), or give a rate > 0")
	}
	ra := datasets.RunArrivals{Trace: wl.Trace, Workload: wl.Workload, RatePerS: wl.RatePerS, Stages: wl.Stages,
		Clients: wl.Clients, ThinkS: wl.ThinkS, N: wl.NumRequests, Seed: wl.Seed}
	if wl.Clients > 0 { // before Open, which makes the clients
		if err := checkInFlightMemory(wl.Clients, wl.NumRequests); err != nil {
			return err
		}
	}
	src, total, err := ra.Open()
	if err != nil {
		return simUsage(err)
	}
	if opts.Arrivals, err = ra.Describe(); err != nil {
		return err
	}
	stderr := cmd.Root().ErrWriter
	bar := progress.New(stderr, "simulate", "requests finished", total) // nil, drawing nothing, off a terminal
	if bar != nil {
		opts.Progress = func(finished int, _ float64) { bar.Set(finished) }
	}
	out := simulate.Outputs{Dir: cmd.String("output"), ChromeTrace: cmd.String("chrome-trace")}
	lock, err := lockOutput(ctx, out.Dir)
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := checkOutputRoom(stderr, out.Dir, total); err != nil {
		return err
	}
	cpu0 := simCPUSeconds()
	sum, err := simulate.Execute(res, src, out, opts)
	bar.Close(err == nil)
	if err != nil {
		return err
	}
	cpu := simCPUSeconds() - cpu0
	if p := cmd.String("save-result"); p != "" {
		a := runresult.BenchServeArrivals{RatePerS: wl.RatePerS, AllAtZero: opts.Arrivals == datasets.AllAtZero, Clients: wl.Clients}
		if wl.Stages != "" || wl.Trace != "" && wl.RatePerS == 0 {
			a.RatePerS = 0 // no one rate: staged, or a trace's recorded times
		}
		if err := runresult.WriteBenchServe(p, sum, a); err != nil {
			return err
		}
	}
	w := cmd.Root().Writer
	if err := sum.WriteText(w); err != nil {
		return err
	}
	if cmd.Bool("breakdown") {
		fmt.Fprintln(w)
		if err := sum.WriteBreakdown(w); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\noutputs in %s: %s, %s, %s, %s", out.Dir, runresult.RequestsCSVFile, runresult.RequestsArrowFile, runresult.SummaryFile, runresult.ConfigFile)
	if out.ChromeTrace != "" {
		fmt.Fprintf(w, "; Chrome trace %s", out.ChromeTrace)
	}
	if p := cmd.String("save-result"); p != "" {
		fmt.Fprintf(w, "; vllm bench serve result %s", p)
	}
	fmt.Fprintln(w)
	for _, cm := range []*runresult.CostModelReport{&sum.CostModel, sum.DecodeCostModel} {
		if cm != nil {
			for _, n := range cm.Profiles.Limits {
				fmt.Fprintf(stderr, "simulate: warning: %s\n", n)
			}
		}
	}
	if opts.Arrivals == datasets.AllAtZero {
		fmt.Fprintf(stderr, "simulate: no --rate and no recorded arrival times: all %d requests arrived at t=0 (an offline batch); give --rate R for Poisson arrivals\n", sum.Metrics.Arrived)
	}
	if cpu > 0 {
		fmt.Fprintf(stderr, "simulated %d requests and %d steps in %.2f CPU-s (%.0f requests/CPU-s)\n",
			sum.Metrics.Arrived, sum.Metrics.Steps, cpu, float64(sum.Metrics.Arrived)/cpu)
	}
	return nil
}

// simCPUSeconds is the process's user + system CPU time.
func simCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
