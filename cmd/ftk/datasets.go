package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

func datasetsCommand() *cli.Command {
	return &cli.Command{
		Name:  "datasets",
		Usage: "make, inspect, import and export request traces",
		Description: `A trace is a CSV of requests: arrived_at (seconds, optional),
num_prefill_tokens, num_decode_tokens, the layout of the real traces in
testdata/traces, and optional shared-content columns that prefix caching
reuses, naming content without its tokens: session_id and turn (each turn
resends the session's history), prefix_hash and prefix_tokens (a shared
system prompt), hash_ids and hash_block_tokens (the Mooncake trace's
content ids, one per 512-token run).

Workloads (lengths):
  fixed:PxO             every request P prompt and O output tokens
                        (fixed:1024x1024, fixed:1024x256, fixed:256x1024)
  splitwise-conv        sampled from testdata/traces/splitwise_conv.csv (has arrivals)
  splitwise-code        sampled from testdata/traces/splitwise_code.csv (has arrivals)
  arxiv-summarization   sampled from the arXiv summarization trace (no arrivals)
  trace:PATH            a trace CSV taken in order
  shared-prefix:groups=G,users=U,system=S,question=Q,output=O
                        G system prompts of S tokens, each dealt to U users
                        per shuffled deck, Q-token questions
  sessions:groups=G,users=U,system=S,turns=T,question=Q,output=O
                        chat sessions of T turns whose history grows; they
                        wait for replies: run them with 'ftk simulate --clients'
The built-in workloads' traces (the repository's testdata/traces) are
embedded in the ftk binary: they work from any folder.

Arrivals: replay (recorded times, optionally rescaled to --rate), poisson
(--rate), gamma (--rate and --cv; CV > 1 is bursty), stages (--stages: the
rate changes over time), or none.

Examples:
  ftk datasets make fixed:1024x256 --rate 4 -n 1000 -o fixed.csv
  ftk datasets make splitwise-conv --arrivals gamma --rate 8 --cv 2 -n 5000 -o bursty.csv
  ftk datasets make splitwise-code -o code.csv            # the recorded trace, replayed
  ftk datasets make arxiv-summarization --load 0.7 --pilot-throughput 3.2 -n 2000 -o arxiv.csv
  ftk datasets show testdata/traces/splitwise_conv.csv
  ftk datasets make shared-prefix:groups=4,users=25,system=1500,question=100,output=50 --stages 30s@1,30s@5 -n 100 -o sp.csv
  ftk datasets import sharegpt ShareGPT_V3.json -o sharegpt.csv --tokenizer tokenizer.json
  ftk datasets import mooncake datasets/testdata/mooncake_small.jsonl -o mooncake.csv
  ftk datasets export fixed.csv --format vllm-bench -o fixed.jsonl`,
		Commands: []*cli.Command{
			datasetsMakeCommand(),
			datasetsShowCommand(),
			datasetsImportCommand(),
			datasetsExportCommand(),
		},
	}
}

// datasetsGenFlags are the flags that pick lengths and arrivals.
func datasetsGenFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "requests", Aliases: []string{"n"}, Usage: "number of requests (default: every row of a replayed trace, else 1000)"},
		&cli.StringFlag{Name: "arrivals", Usage: "arrival process: replay, poisson, gamma or none (default: gamma with --cv; for trace:PATH with times, replay (rescaled by --rate/--load); else poisson with --rate/--load, replay when the workload has recorded times, none otherwise)"},
		&cli.FloatFlag{Name: "rate", Usage: "mean arrival rate, requests/s (with replay: rescale the recorded times to this rate)"},
		&cli.FloatFlag{Name: "cv", Usage: "gamma arrivals: coefficient of variation of inter-arrival times (1 = Poisson, > 1 bursty, 0 = constant gaps)"},
		&cli.StringFlag{Name: "stages", Usage: "stages arrivals: Poisson whose rate changes over time, DURATIONs@RATE,..., e.g. 60s@2,120s@8 (the last rate holds after its stage)"},
		&cli.FloatFlag{Name: "load", Usage: "arrival rate as a fraction of capacity, e.g. 0.7 (capacity from --pilot-throughput, or by 'make' from a simulated search with --model)"},
		&cli.FloatFlag{Name: "pilot-throughput", Usage: "measured capacity for --load: completed requests/s of a saturated pilot run"},
		&cli.Uint64Flag{Name: "seed", Value: spec.DefaultSeed, Usage: "random seed: same seed and flags give a byte-identical trace"},
	}
}

// datasetsDefaultRequests is the size of a generated (not replayed) trace.
const datasetsDefaultRequests = 1000

// datasetsGen is a resolved workload, arrival process and size.
type datasetsGen struct {
	w       datasets.Workload
	a       datasets.Arrivals
	n       int
	seed    uint64
	rateMsg string // how the rate was chosen, for the user
}

func datasetsWorkload(cmd *cli.Command, spec string) (datasets.Workload, error) {
	return datasets.ParseWorkload(spec)
}

// datasetsGenFrom resolves the generation flags for workload w.
func datasetsGenFrom(cmd *cli.Command, w datasets.Workload) (datasetsGen, error) {
	g := datasetsGen{w: w, n: cmd.Int("requests"), seed: cmd.Uint64("seed")}
	rate := cmd.Float("rate")
	switch {
	case cmd.IsSet("load") && cmd.IsSet("rate"):
		return g, usageError("give --rate or --load, not both")
	case cmd.IsSet("load") && cmd.IsSet("pilot-throughput") && cmd.IsSet("model"):
		return g, usageError("give --pilot-throughput (measured capacity) or --model (simulated capacity search), not both")
	case cmd.IsSet("load") && !cmd.IsSet("pilot-throughput") && !cmd.IsSet("model"):
		return g, usageError("--load needs a capacity: pass --pilot-throughput RPS (completed requests/s of a saturated pilot run), " +
			"or --model M [--device D --tp N ...] to find it by a simulated search (highest rate whose queue stays bounded)")
	case cmd.IsSet("pilot-throughput") && !cmd.IsSet("load"):
		return g, usageError("--pilot-throughput is the capacity for --load: give --load too")
	case cmd.IsSet("load") && cmd.IsSet("pilot-throughput"):
		r, err := datasets.RateForLoad(cmd.Float("load"), cmd.Float("pilot-throughput"))
		if err != nil {
			return g, usageError("%v", err)
		}
		rate = r
		g.rateMsg = fmt.Sprintf("rate %.6g req/s = load %.6g x pilot throughput %.6g req/s", rate, cmd.Float("load"), cmd.Float("pilot-throughput"))
	case cmd.IsSet("load"):
		if !(cmd.Float("load") > 0) {
			return g, usageError("--load must be > 0, got %g", cmd.Float("load"))
		}
		capRPS, how, err := simulatedCapacity(cmd, w, g.seed)
		if err != nil {
			return g, err
		}
		rate = cmd.Float("load") * capRPS
		g.rateMsg = fmt.Sprintf("%s\nrate %.6g req/s = load %.6g x capacity %.6g req/s", how, rate, cmd.Float("load"), capRPS)
	case cmd.IsSet("rate"):
		g.rateMsg = fmt.Sprintf("rate %.6g req/s", rate)
	}
	c := datasets.ArrivalChoice{Kind: cmd.String("arrivals"), RateRPS: rate, HasRate: cmd.IsSet("rate") || cmd.IsSet("load"),
		CV: cmd.Float("cv"), HasCV: cmd.IsSet("cv"), ReplayRecorded: true}
	if cmd.IsSet("stages") {
		st, err := datasets.ParseStages(cmd.String("stages"))
		if err != nil {
			return g, usageError("--stages: %v", err)
		}
		c.Stages = st
	}
	g.a = datasets.PickArrivals(w, c)
	kind := g.a.Kind
	if kind == datasets.ArrivalsGamma && !cmd.IsSet("cv") {
		return g, usageError("--arrivals gamma needs --cv (1 = Poisson, > 1 bursty)")
	}
	if err := g.a.Validate(); err != nil {
		return g, usageError("%v", err)
	}
	if g.n < 0 {
		return g, usageError("--requests must be >= 1, got %d", g.n)
	}
	inOrder := w.Kind == datasets.KindTrace || kind == datasets.ArrivalsReplay
	if g.n == 0 && !inOrder {
		g.n = datasetsDefaultRequests
	}
	return g, nil
}

func datasetsMakeCommand() *cli.Command {
	return &cli.Command{
		Name:      "make",
		Usage:     "generate a trace CSV from a workload and an arrival process",
		ArgsUsage: "WORKLOAD",
		Description: `Writes a trace CSV (see 'ftk datasets --help' for workloads and arrivals).
Arrival times are written with six decimals (microseconds). The same
arguments and --seed give a byte-identical file.

Examples:
  ftk datasets make fixed:1024x256 --rate 4 -n 1000 -o fixed.csv
  ftk datasets make splitwise-conv --arrivals gamma --rate 8 --cv 2 -n 5000 -o bursty.csv
  ftk datasets make splitwise-conv --arrivals replay --rate 2 -o conv-2rps.csv  # recorded, rescaled
  ftk datasets make trace:run1.csv --rate 2 -o run1-2rps.csv     # a trace with times: rescaled
  ftk datasets make arxiv-summarization --load 0.7 --pilot-throughput 3.2 -o arxiv.csv
  ftk datasets make fixed:1024x256 --load 0.7 --model llama-3.1-8b --device h100 -n 2000 -o f.csv

--load is a fraction of capacity. With --pilot-throughput the capacity is that
measured rate (completed requests/s of a saturated pilot run). With --model
(and --device, --tp/--pp/--ep/--dp) it is found by simulation: Poisson runs of
--probe-requests requests of the workload, bisecting for the highest rate at
which the waiting queue stays bounded (it grows by at most 2 requests per 100
arrivals between the second and last quarter of the run). The chosen rate is
printed.`,
		Flags: append(append(datasetsGenFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "trace CSV to write (required)"}),
			capacityFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageError("datasets make needs one WORKLOAD argument (fixed:PxO, %s or trace:PATH)", strings.Join(datasets.BuiltinNames(), ", "))
			}
			if err := checkWorkloadName(cmd.Args().First()); err != nil {
				return usageError("datasets make: WORKLOAD %q: %v", cmd.Args().First(), err)
			}
			out := cmd.String("output")
			if out == "" {
				return usageError("datasets make needs -o FILE")
			}
			lock, err := lockOutput(ctx, out)
			if err != nil {
				return err
			}
			defer lock.Release()
			w, err := datasetsWorkload(cmd, cmd.Args().First())
			if err != nil {
				return err
			}
			g, err := datasetsGenFrom(cmd, w)
			if err != nil {
				return err
			}
			n, err := datasets.WriteGenerated(out, g.w, g.a, g.n, g.seed, datasets.TraceInfo{TokensEstimated: w.TokensEstimated})
			if err != nil {
				return err
			}
			stderr := cmd.Root().ErrWriter
			if g.rateMsg != "" {
				fmt.Fprintf(stderr, "%s\n", g.rateMsg)
			}
			fmt.Fprintf(stderr, "wrote %s: %d requests of %s, arrivals %s, seed %d\n", out, n, w, g.a, g.seed)
			return nil
		},
	}
}

func datasetsShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a trace's or workload's statistics: count, length percentiles, arrival rate",
		ArgsUsage: "FILE|WORKLOAD",
		Description: `Prints the number of requests, prompt and output lengths (mean, min,
P50, P90, P99, max; percentiles by linear interpolation between closest ranks, as numpy),
and the arrival rate, duration and coefficient of variation of the gaps.

A built-in workload with no size or arrival flags shows its recorded trace;
with flags it shows what 'datasets make' would write.

Examples:
  ftk datasets show testdata/traces/splitwise_conv.csv
  ftk datasets show splitwise-code
  ftk datasets show fixed:1024x256 --rate 4 -n 1000`,
		Flags: datasetsGenFlags(),
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageError("datasets show needs one FILE or WORKLOAD argument")
			}
			arg := cmd.Args().First()
			reqs, label, estimated, err := datasetsShowInput(cmd, arg)
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			fmt.Fprintf(w, "%s\n", label)
			if err := datasets.ComputeStats(reqs).WriteText(w); err != nil {
				return err
			}
			if estimated {
				fmt.Fprintln(w, "token counts: ESTIMATED (~4 characters per token), not from a tokenizer")
			}
			return nil
		},
	}
}

// datasetsShowInput returns the requests 'datasets show' summarises.
func datasetsShowInput(cmd *cli.Command, arg string) (reqs []spec.Request, label string, estimated bool, err error) {
	if !datasets.IsWorkloadSpec(arg) {
		reqs, info, err := datasets.ReadTraceInfo(arg)
		return reqs, arg, info.TokensEstimated, err
	}
	w, err := datasetsWorkload(cmd, arg)
	if err != nil {
		return nil, "", false, err
	}
	genFlags := false
	for _, f := range []string{"requests", "arrivals", "rate", "cv", "stages", "load", "seed"} {
		genFlags = genFlags || cmd.IsSet(f)
	}
	if w.Kind == datasets.KindSampled && !genFlags {
		return w.Requests(), fmt.Sprintf("%s: recorded trace %s", w, w.Path), w.TokensEstimated, nil
	}
	g, err := datasetsGenFrom(cmd, w)
	if err != nil {
		return nil, "", false, err
	}
	reqs, err = datasets.Generate(g.w, g.a, g.n, g.seed)
	if err != nil {
		return nil, "", false, err
	}
	return reqs, fmt.Sprintf("%s: arrivals %s, seed %d", w, g.a, g.seed), w.TokensEstimated, nil
}

func datasetsImportCommand() *cli.Command {
	return &cli.Command{
		Name:  "import",
		Usage: "import a public dataset as a trace",
		Commands: []*cli.Command{datasetsImportMooncakeCommand(), {
			Name:      "sharegpt",
			Usage:     "make a length-only trace from a ShareGPT JSON file",
			ArgsUsage: "FILE",
			Description: `Reads the public ShareGPT format (a JSON array of {"id", "conversations":
[{"from": "human"|"gpt"|"system", "value": TEXT}, ...]}) and writes one
request per human->gpt exchange: the prompt is the conversation so far
(earlier messages plus this human message), the output the gpt reply, the
session_id the conversation id. No arrival times: give them with
'datasets make trace:FILE --rate R'.

Token counts are exact with --tokenizer (a Hugging Face tokenizer.json with
a BPE or WordLevel model: GPT-2, Llama 2/3, Mistral, Qwen style); without
one they are ESTIMATED as ceil(characters/4), which is recorded in the
trace (token_counts=estimated) and printed.

Examples:
  ftk datasets import sharegpt ShareGPT_V3_unfiltered_cleaned_split.json -o sharegpt.csv
  ftk datasets import sharegpt sg.json --tokenizer llama3/tokenizer.json --first-turn -o sg.csv`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "trace CSV to write (required)"},
				&cli.StringFlag{Name: "tokenizer", Usage: "Hugging Face tokenizer.json for exact token counts"},
				&cli.BoolFlag{Name: "first-turn", Usage: "only the first human->gpt exchange of each conversation (as vLLM's ShareGPT benchmark)"},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Len() != 1 {
					return usageError("datasets import sharegpt needs one FILE argument")
				}
				out := cmd.String("output")
				if out == "" {
					return usageError("datasets import sharegpt needs -o FILE")
				}
				lock, err := lockOutput(ctx, out)
				if err != nil {
					return err
				}
				defer lock.Release()
				opts := datasets.ShareGPTOptions{FirstTurnOnly: cmd.Bool("first-turn")}
				if p := cmd.String("tokenizer"); p != "" {
					tok, err := datasets.LoadTokenizer(p)
					if err != nil {
						return err
					}
					opts.Tokenizer = tok
				}
				reqs, sum, err := datasets.ImportShareGPT(cmd.Args().First(), opts)
				if err != nil {
					return err
				}
				if err := datasets.WriteTraceInfo(out, reqs, datasets.TraceInfo{TokensEstimated: sum.Estimated}); err != nil {
					return err
				}
				stderr := cmd.Root().ErrWriter
				fmt.Fprintf(stderr, "wrote %s: %d requests from %d conversations (%d exchanges skipped: empty prompt or reply)\n", out, sum.Requests, sum.Conversations, sum.Skipped)
				if sum.Estimated {
					fmt.Fprintln(stderr, "token counts are ESTIMATED as ceil(characters/4); pass --tokenizer tokenizer.json for exact counts")
				} else {
					fmt.Fprintf(stderr, "token counts are exact for %s (text only: no BOS/EOS or chat template)\n", opts.Tokenizer.Path())
				}
				return nil
			},
		}},
	}
}

func datasetsExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a trace in a form a benchmark client replays",
		ArgsUsage: "TRACE",
		Description: `Formats:
  vllm-bench  JSONL {"prompt": TEXT, "output_tokens": N} for vLLM's serving benchmark
              (--dataset-name custom). Prompts are seeded random common words, one
              token per word (about: exact when --tokenizer is given), so no two
              prompts share a prefix. vLLM draws its own arrivals: the matching
              --request-rate and --burstiness (1/CV^2) are printed.
  mooncake    JSONL {"timestamp": MS, "input_length": N, "output_length": M}: replays
              the recorded arrival times (AIPerf: --custom-dataset-type mooncake_trace
              --fixed-schedule).
  csv         the trace CSV itself.

Examples:
  ftk datasets export fixed.csv --format vllm-bench -o fixed.jsonl
  ftk datasets export conv.csv --format vllm-bench --tokenizer tokenizer.json -o conv.jsonl
  ftk datasets export conv.csv --format mooncake -o conv.mooncake.jsonl`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: datasets.FormatVLLMBench, Usage: "output format: " + strings.Join(datasets.ExportFormats(), ", ")},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "file to write (required)"},
			&cli.StringFlag{Name: "tokenizer", Usage: "vllm-bench: Hugging Face tokenizer.json, for prompts of exact token length"},
			&cli.Uint64Flag{Name: "seed", Value: spec.DefaultSeed, Usage: "vllm-bench: seed of the prompt words"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageError("datasets export needs one TRACE argument (a trace CSV; make one with 'datasets make')")
			}
			out := cmd.String("output")
			if out == "" {
				return usageError("datasets export needs -o FILE")
			}
			lock, err := lockOutput(ctx, out)
			if err != nil {
				return err
			}
			defer lock.Release()
			reqs, info, err := datasets.ReadTraceInfo(cmd.Args().First())
			if err != nil {
				return err
			}
			stderr := cmd.Root().ErrWriter
			switch f := cmd.String("format"); f {
			case datasets.FormatCSV:
				err = datasets.WriteTraceInfo(out, reqs, info)
			case datasets.FormatMooncake:
				err = datasets.ExportMooncake(out, reqs)
			case datasets.FormatVLLMBench:
				var tok *datasets.Tokenizer
				if p := cmd.String("tokenizer"); p != "" {
					if tok, err = datasets.LoadTokenizer(p); err != nil {
						return err
					}
				}
				m, err := datasets.NewPromptMaker(tok, cmd.Uint64("seed"))
				if err != nil {
					return err
				}
				if err := datasets.ExportVLLMBench(out, reqs, m); err != nil {
					return err
				}
				printVLLMBenchHint(stderr, out, reqs, m.Exact())
			default:
				return usageError("--format %q: want one of %s", f, strings.Join(datasets.ExportFormats(), ", "))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "wrote %s: %d requests\n", out, len(reqs))
			return nil
		},
	}
}

// printVLLMBenchHint prints the vLLM benchmark command that replays out.
func printVLLMBenchHint(w io.Writer, out string, reqs []spec.Request, exact bool) {
	if !exact {
		fmt.Fprintln(w, "prompt lengths are approximate (one common word per token); pass --tokenizer tokenizer.json for exact lengths")
	}
	st := datasets.ComputeStats(reqs)
	arr := "--request-rate inf"
	if st.HasArrivals && st.RateRPS > 0 && !math.IsInf(st.RateRPS, 0) {
		arr = fmt.Sprintf("--request-rate %.4g", st.RateRPS)
		if st.InterArrivalCV > 0 {
			arr += fmt.Sprintf(" --burstiness %.4g", 1/(st.InterArrivalCV*st.InterArrivalCV))
		}
	}
	fmt.Fprintf(w, "replay with: vllm bench serve --dataset-name custom --dataset-path %s --custom-output-len -1 --custom-skip-chat-template --disable-shuffle --ignore-eos --num-prompts %d %s\n", out, len(reqs), arr)
}

func datasetsImportMooncakeCommand() *cli.Command {
	return &cli.Command{
		Name:      "mooncake",
		Usage:     "make a trace from a Mooncake trace (JSON Lines with hash_ids)",
		ArgsUsage: "FILE",
		Description: `Reads the format of the public Mooncake traces (kvcache-ai/Mooncake,
FAST'25): one JSON object a line, {"timestamp": MS, "input_length": N,
"output_length": M, "hash_ids": [ID, ...]}, timestamp in milliseconds
(optional), hash_ids naming the prompt's runs of --hash-block-tokens tokens
(512 in the public traces): requests with equal leading ids share those
tokens, which prefix caching reuses. Writes a trace CSV with arrived_at and
the hash_ids and hash_block_tokens columns.

Example:
  ftk datasets import mooncake datasets/testdata/mooncake_small.jsonl -o mooncake.csv`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "trace CSV to write (required)"},
			&cli.IntFlag{Name: "hash-block-tokens", Value: datasets.MooncakeHashBlockTokens, Usage: "tokens per hash id"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageError("datasets import mooncake needs one FILE argument")
			}
			out := cmd.String("output")
			if out == "" {
				return usageError("datasets import mooncake needs -o FILE")
			}
			n, ids, err := datasets.ConvertMooncake(cmd.Args().First(), out, cmd.Int("hash-block-tokens"))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.Root().ErrWriter, "wrote %s: %d requests, %d hash ids of %d tokens\n", out, n, ids, cmd.Int("hash-block-tokens"))
			return nil
		},
	}
}
