package main

import (
	"context"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/ingest"
	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "read profiling CSV + YAML into an Arrow profile dataset",
		ArgsUsage: "PATH... -o DIR | --summary DIR",
		Description: `Reads profile CSV files (Frontier linear_op / attention* / moe, Vidur mlp.csv and
network all_reduce / send_recv, CPU overhead, and what 'ftk collect' writes). A PATH
is a file or a folder, walked for *.csv. Each file's family is told from its columns.

Writes DIR/<family>.<MEASUREMENT_TYPE>.arrow (one long schema: operator, measurement
type, device, model, TP/EP/keys, features, median/mean/min/max/std ms, count, source
file and line) and DIR/manifest.json (inputs with sha256, rows in and out, every
excluded row with file:line:column and why). Outputs appear atomically, manifest last;
the same inputs give byte-identical files. A dataset is one device: it comes from
--device, else a YAML with a device: key beside the files (or ftk-collect.yaml),
else the folder names (frontier-h800/Qwen3-30B-A3B-tiny => h800, qwen3-30b-a3b-tiny).

A PATH that is an AIConfigurator database (a <gpu> folder laid out as
<table family>/vllm/<vLLM version>/*.parquet with collection_meta.yaml or reuse.yaml)
is read as kernel tables instead: every row of the tables ftk prices (gemm, context
and generation attention, moe, custom all-reduce, MLA) in every version folder, a bad
cell failing with its file, row and column. DIR receives a copy of those tables, the
GPU's system YAML and kernel_tables.json (rows, kernel sources, sha256 per file);
'ftk simulate --bundle DIR --vllm-version V' prices ops from it (docs/design.md).

A file says its measurement type in a measurement_type column; one that does not is
CUDA_EVENT, or KERNEL_ONLY when its name ends in _kernel_only or it is a Vidur mlp.csv
(Vidur's profiler sums the durations of the kernels inside each operator: kernel times).
--measurement-type gives the type of the files that do not say it.

Bad rows (text in a numeric cell, NaN/negative/zero times, min > median > max) are
excluded and reported; --strict makes any of them fatal. An unreadable header, a
missing required column, an unknown family or a file mixing measurement types fails.

Examples:
  ftk ingest testdata/profiles/frontier-h800 -o runs/h800
  ftk ingest testdata/profiles/vidur-h100 -o runs/h100 --strict
  ftk ingest my.csv --device h100 --model llama-3.1-8b -o runs/mine
  ftk ingest testdata/aiconfigurator/h100_sxm -o runs/h100-kernels
  ftk ingest --summary runs/h800`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "dataset folder to write (created; an existing one must hold a dataset)"},
			&cli.StringFlag{Name: "device", Usage: "label every input with this device (catalog name or alias)", Validator: freeLabel},
			&cli.StringFlag{Name: "model", Usage: "label every model-specific input with this model", Validator: freeLabel},
			&cli.BoolFlag{Name: "strict", Usage: "fail if any row is excluded"},
			&cli.StringFlag{Name: "measurement-type", Usage: "measurement type of the files without a measurement_type column: CUDA_EVENT (operator wall time between CUDA events, launch gaps included) or KERNEL_ONLY (kernel durations summed)",
				Validator: func(v string) error { return oneOf(spec.CUDAEvent, spec.KernelOnly)(strings.ToUpper(v)) }},
			&cli.StringFlag{Name: "summary", Usage: "print a dataset's operators, row counts and feature domains (or a kernel-table copy's tables), then exit"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out, errw := cmd.Root().Writer, cmd.Root().ErrWriter
			if dir := cmd.String("summary"); dir != "" {
				if cmd.Args().Len() > 0 || cmd.String("output") != "" {
					return usageError("ingest --summary DIR takes no PATH and no -o")
				}
				if km, err := kerneldb.ReadManifest(dir); err == nil {
					ingest.WriteKernelReport(out, dir, km)
					return nil
				}
				d, err := dataset.Load(dir)
				if err != nil {
					return err
				}
				return dataset.WriteSummary(out, dir, d)
			}
			if cmd.Args().Len() == 0 {
				return usageError("ingest needs at least one PATH (a CSV file or a folder); see 'ftk ingest --help'")
			}
			dir := cmd.String("output")
			if dir == "" {
				return usageError("ingest needs -o DIR, the dataset folder to write")
			}
			lock, err := lockOutput(ctx, dir)
			if err != nil {
				return err
			}
			defer lock.Release()
			if src := cmd.Args().First(); kerneldb.IsDatabase(src) {
				if cmd.Args().Len() > 1 || cmd.String("device") != "" || cmd.String("model") != "" {
					return usageError("ingest of an AIConfigurator database takes one <gpu> folder, no --device or --model (the tables say both)")
				}
				km, err := ingest.KernelTables(src, dir)
				if err != nil {
					return err
				}
				ingest.WriteKernelReport(errw, dir, km)
				return nil
			}
			m, err := ingest.Ingest(cmd.Args().Slice(), dir, ingest.Options{
				Device:      cmd.String("device"),
				Model:       cmd.String("model"),
				Strict:      cmd.Bool("strict"),
				Measurement: strings.ToUpper(cmd.String("measurement-type")),
			})
			if err != nil {
				return err
			}
			ingest.WriteReport(errw, dir, m)
			return nil
		},
	}
}
