package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/ftk-dev/ftk/simulate"
	"github.com/urfave/cli/v3"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

func simulateCommand() *cli.Command {
	def := simulate.DefaultConfig()
	layout := layoutFlags()
	for _, f := range layout {
		if f, ok := f.(*cli.IntFlag); ok && f.Name == "dp" {
			f.Aliases = []string{"replicas"}
			f.Usage = "data-parallel degree: engine replicas behind the router"
		}
	}
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "YAML config with every setting (a run's config.yaml); flags override it"},
		&cli.StringFlag{Name: "model", Usage: "model: catalog name or config.json path (see 'ftk models list')"},
		&cli.StringFlag{Name: "device", Value: def.Device, Usage: "device (see 'ftk devices list')"},
		&cli.StringFlag{Name: "trace", Usage: "trace CSV (arrived_at, num_prefill_tokens, num_decode_tokens) to replay"},
		&cli.StringFlag{Name: "workload", Usage: "generated workload: fixed:PROMPTxOUTPUT, splitwise-conv, splitwise-code, arxiv-summarization or trace:PATH"},
		&cli.FloatFlag{Name: "rate", Usage: "Poisson arrival rate of --workload in requests/s; for --trace, rescale its arrivals to this rate (0: as recorded, or all at time 0 when the trace has no times)"},
		&cli.IntFlag{Name: "num-requests", Usage: "requests to generate, or the first requests of --trace to replay (0: the whole trace)"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed of the generated workload"},
		&cli.StringFlag{Name: "bundle", Usage: "fit model bundle for operator times (default: the built-in roofline device model)"},
		&cli.StringFlag{Name: "calibration", Usage: "calibration YAML (host_ms_per_step, launch_us, family_scale) from 'ftk validate calibrate'"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "sim-out", Usage: "directory for requests.csv, requests.arrow, summary.json, config.yaml"},
		&cli.StringFlag{Name: "chrome-trace", Usage: "write a Chrome trace (chrome://tracing, Perfetto) of the run to this file"},
		&cli.IntFlag{Name: "max-num-batched-tokens", Value: def.Engine.MaxNumBatchedTokens, Usage: "token budget of one engine step"},
		&cli.IntFlag{Name: "max-num-seqs", Value: def.Engine.MaxNumSeqs, Usage: "most requests running at once per replica"},
		&cli.IntFlag{Name: "max-model-len", Usage: "longest request (prompt + output) served; longer ones are rejected (0: min(model's maximum, 8192))"},
		&cli.IntFlag{Name: "block-size", Value: def.Engine.BlockSize, Usage: "tokens per KV-cache block"},
		&cli.FloatFlag{Name: "gpu-memory-utilization", Value: def.Engine.GPUMemoryUtilization, Usage: "share of GPU memory for weights, activations and KV cache"},
		&cli.IntFlag{Name: "long-prefill-token-threshold", Usage: "most prompt tokens one request schedules per step (0: no limit)"},
		&cli.BoolFlag{Name: "enable-chunked-prefill", Value: def.Engine.EnableChunkedPrefill, Usage: "split long prompts over steps (--enable-chunked-prefill=false to turn off)"},
		&cli.IntFlag{Name: "num-gpu-blocks-override", Usage: "KV-cache blocks per replica instead of those that fit in memory"},
		&cli.StringFlag{Name: "router", Value: def.Router, Usage: "how requests spread over replicas: round-robin or least-loaded"},
	}, layout...)
	return &cli.Command{
		Name:      "simulate",
		Usage:     "simulate vLLM V1 serving of a trace or workload and report latency and throughput",
		ArgsUsage: " ",
		Description: `Replays requests against engine replicas with vLLM V1 scheduling (token budget,
max sequences, chunked prefill, paged KV cache, preemption by recompute) and
tensor / pipeline / data parallelism. Step times come from a fit bundle or,
without one, from the built-in roofline device model (labelled as such).

Outputs in -o DIR: requests.csv and requests.arrow (one row per request, in
completion order), summary.json (metrics and the full config) and config.yaml
(rerun with --config DIR/config.yaml). The summary table goes to stdout.

Examples:
  ftk simulate --model llama-3.1-8b --device h100 --trace ../shared/traces/splitwise_conv.csv -o out
  ftk simulate --model llama-3.3-70b --tp 4 --workload fixed:1024x256 --rate 4 --num-requests 500 --seed 1
  ftk simulate --config out/config.yaml -o out2 --chrome-trace out2/trace.json`,
		Flags: flags,
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return usageError("simulate: %v (see 'ftk simulate --help')", err)
		},
		Action: runSimulate,
	}
}

// simConfig merges the defaults, --config and the flags set.
func simConfig(cmd *cli.Command) (simulate.Config, error) {
	cfg := simulate.DefaultConfig()
	if p := cmd.String("config"); p != "" {
		var err error
		if cfg, err = simulate.LoadConfig(p); err != nil {
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
	set("router", func() { cfg.Router = cmd.String("router") })
	set("bundle", func() { cfg.Bundle = cmd.String("bundle") })
	set("trace", func() { w.Trace, w.Workload = cmd.String("trace"), "" })
	set("workload", func() { w.Workload, w.Trace = cmd.String("workload"), "" })
	set("rate", func() { w.RatePerS = cmd.Float("rate") })
	set("num-requests", func() { w.NumRequests = cmd.Int("num-requests") })
	set("seed", func() { w.Seed = cmd.Uint64("seed") })
	set("max-num-batched-tokens", func() { e.MaxNumBatchedTokens = cmd.Int("max-num-batched-tokens") })
	set("max-num-seqs", func() { e.MaxNumSeqs = cmd.Int("max-num-seqs") })
	set("max-model-len", func() { e.MaxModelLen = cmd.Int("max-model-len") })
	set("block-size", func() { e.BlockSize = cmd.Int("block-size") })
	set("gpu-memory-utilization", func() { e.GPUMemoryUtilization = cmd.Float("gpu-memory-utilization") })
	set("long-prefill-token-threshold", func() { e.LongPrefillTokenThreshold = cmd.Int("long-prefill-token-threshold") })
	set("enable-chunked-prefill", func() { e.EnableChunkedPrefill = cmd.Bool("enable-chunked-prefill") })
	set("num-gpu-blocks-override", func() { e.NumGPUBlocksOverride = cmd.Int("num-gpu-blocks-override") })
	if cmd.IsSet("trace") && cmd.IsSet("workload") {
		return cfg, usageError("simulate: give --trace or --workload, not both")
	}
	if p := cmd.String("calibration"); p != "" {
		c, err := simulate.LoadCalibration(p)
		if err != nil {
			return cfg, err
		}
		cfg.Calibration = c
	}
	switch {
	case cfg.Model == "":
		return cfg, usageError("simulate needs --model (or a --config that names one)")
	case w.Trace == "" && w.Workload == "":
		return cfg, usageError("simulate needs --trace FILE or --workload W (or a --config that names one)")
	}
	return cfg, nil
}

func runSimulate(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return usageError("simulate takes no arguments, got %q (see 'ftk simulate --help')", cmd.Args().Slice())
	}
	cfg, err := simConfig(cmd)
	if err != nil {
		return err
	}
	var opts simulate.Options
	src, total, err := simulate.OpenSource(cfg.Workload)
	if err != nil {
		return err
	}
	stderr := cmd.Root().ErrWriter
	var bar *simProgress
	if simIsTerminal(stderr) {
		bar = newSimProgress(stderr, total)
		opts.Progress = bar.update
	}
	out := simulate.Outputs{Dir: cmd.String("output"), ChromeTrace: cmd.String("chrome-trace")}
	cpu0 := simCPUSeconds()
	sum, err := simulate.Execute(cfg, src, out, opts)
	if bar != nil {
		bar.close(err == nil)
	}
	if err != nil {
		return err
	}
	cpu := simCPUSeconds() - cpu0
	w := cmd.Root().Writer
	if err := sum.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\noutputs in %s: %s, %s, %s, %s", out.Dir, simulate.RequestsCSVFile, simulate.RequestsArrowFile, simulate.SummaryFile, simulate.ConfigFile)
	if out.ChromeTrace != "" {
		fmt.Fprintf(w, "; Chrome trace %s", out.ChromeTrace)
	}
	fmt.Fprintln(w)
	if cpu > 0 {
		fmt.Fprintf(stderr, "simulated %d requests and %d steps in %.2f CPU-s (%.0f requests/CPU-s)\n",
			sum.Metrics.Arrived, sum.Metrics.Steps, cpu, float64(sum.Metrics.Arrived)/cpu)
	}
	return nil
}

// simIsTerminal reports whether w is a terminal (a character device).
func simIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// simCPUSeconds is the process's user + system CPU time.
func simCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// simProgress is the progress bar of a run: requests arrived so far.
type simProgress struct {
	p     *mpb.Progress
	b     *mpb.Bar
	total int
}

func newSimProgress(w io.Writer, total int) *simProgress {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
	b := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name("simulate "), decor.CountersNoUnit("%d/%d requests")),
		mpb.AppendDecorators(decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)))
	return &simProgress{p: p, b: b, total: total}
}

func (s *simProgress) update(arrived int, _ float64) { s.b.SetCurrent(int64(arrived)) }

func (s *simProgress) close(ok bool) {
	if ok {
		s.b.SetCurrent(int64(s.total))
	} else {
		s.b.Abort(false)
	}
	s.p.Wait()
}
