package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/fit"
	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

func fitCommand() *cli.Command {
	return &cli.Command{
		Name:      "fit",
		Usage:     "fit random-forest latency predictors into an Arrow model bundle",
		ArgsUsage: "DATASET -o BUNDLE | --bundle BUNDLE --check-coverage",
		Description: `Trains one predictor per operator key (operator, measurement type, TP and the MoE /
collective conditions) of a profile dataset written by 'ftk ingest', and writes them
as one Arrow IPC model bundle. A bundle holds one measurement type (--measurement).

Each predictor is a random forest (quantile-binned splits, bootstrap samples, trees
in parallel, deterministic for --seed) beside a physical fallback: a non-negative
linear model of the operator's FLOPs and bytes. A small search picks, by k-fold
cross-validation, the target (log of the ratio to the fallback, or log time) and the
minimum leaf size; a held-out split is scored separately. Folds and holdout group the
measurements of one shape. Queries outside the sampled domain add the fallback's
increment to the edge value, or answer the edge value, whichever cross-validates
better, and are counted.

Every row is kept. Repeated measurements of a shape are samples (--repeats all, each
a sample of its own as the error on all rows counts it; or --repeats median, one per
shape); their spread is reported as the noise floor beside the errors,
and sweeps more than 25% apart are listed with their ratio. A key with fewer shapes
than a forest needs gets the forest pooled over its operator's keys or the physical
fallback, whichever cross-validates better, and is marked; the conditions keys differ
in (TP, EP, experts, gating context, routing path, group size) split predictors or
become features of the pooled forest, decided by cross-validation per key. The table
gives the error on all rows of the dataset beside CV, holdout and noise floor.
A bundle holds one model: of a dataset of several models (ingest of a folder of
them), --model picks one (its samples and the model-independent collectives).

--check-coverage compares the query domain of a simulation (--model, --tp/--ep/--pp,
engine limits) with every predictor's sampled domain, prints a per-operator table and
the ftk collect command that would close what is missing, and exits with status 3
when the simulation would leave the sampled domain. With --bundle it checks an
existing bundle without fitting; with --bundle naming kernel tables it lists every op of
the simulation with the table that prices it (or the built-in device model it falls
back to) and the least exact answer over the query domain.

Examples:
  ftk ingest testdata/profiles/frontier-a800-qwen3-30b-a3b -o runs/a800
  ftk fit runs/a800 -o runs/a800.bundle.arrow
  ftk fit runs/h800 -o runs/h800.bundle.arrow --model qwen3-30b-a3b-tiny --measurement KERNEL_ONLY --report
  ftk fit runs/h800 -o runs/h800.bundle.arrow --check-coverage --model qwen3-30b-a3b-tiny \
      --tp 1 --max-num-batched-tokens 4096 --max-num-seqs 64 --max-model-len 4096
  ftk fit --bundle runs/a800.bundle.arrow --check-coverage --tp 8 --ep 8
  ftk fit --bundle testdata/aiconfigurator/h100_sxm --check-coverage --model qwen3-30b-a3b --tp 2 --vllm-version 0.14.0`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "model bundle to write (Arrow IPC)"},
			&cli.StringFlag{Name: "bundle", Usage: "check an existing bundle, or kernel tables (an AIConfigurator <gpu> folder or 'ftk ingest' of one), with --check-coverage instead of fitting"},
			&cli.StringFlag{Name: "vllm-version", Usage: "coverage of kernel tables: the vLLM version whose tables to check (default: the newest)"},
			&cli.StringFlag{Name: "measurement", Value: spec.CUDAEvent, Usage: "measurement type to fit: CUDA_EVENT or KERNEL_ONLY (HOST_WALL, CPU); default CUDA_EVENT, or KERNEL_ONLY when every operator row of the dataset is"},
			&cli.StringFlag{Name: "model", Usage: "model for the operator shapes and the coverage check (default: the dataset's); of a dataset of several models, the one to fit"},
			&cli.Uint64Flag{Name: "seed", Value: spec.DefaultSeed, Usage: "seed of folds, holdout and bootstrap draws"},
			&cli.IntFlag{Name: "trees", Value: 64, Usage: "trees per forest"},
			&cli.IntFlag{Name: "folds", Value: 5, Usage: "k of the k-fold cross-validation"},
			&cli.StringFlag{Name: "repeats", Value: bundle.RepeatsAll, Usage: "repeated measurements of a shape: all (each a sample) or median (one per shape)"},
			&cli.BoolFlag{Name: "report", Usage: "print the per-operator error table on the dataset after fitting"},
			&cli.BoolFlag{Name: "check-coverage", Usage: "check that the predictors cover a simulation's query domain; exit 3 when not"},
			&cli.Float64Flag{Name: "gap-ratio", Value: fit.DefaultGapRatio, Usage: "coverage: report neighbouring samples more than this ratio apart as gaps"},
		}, append(engineLimitFlags("coverage: "), layoutFlags()...)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out, errw := cmd.Root().Writer, cmd.Root().ErrWriter
			var b *bundle.Bundle
			var ts *fit.TrainingSet
			if path := cmd.String("bundle"); path != "" {
				if cmd.Args().Len() > 0 || cmd.String("output") != "" || !cmd.Bool("check-coverage") {
					return usageError("fit --bundle BUNDLE checks an existing bundle: it takes --check-coverage and no DATASET or -o")
				}
				if kerneldb.IsDatabase(path) {
					return checkTableCoverage(cmd, path)
				}
				var err error
				if b, err = bundle.Load(path); err != nil {
					return err
				}
			} else {
				if cmd.Args().Len() != 1 {
					return usageError("fit needs one DATASET (a folder written by ftk ingest); see 'ftk fit --help'")
				}
				if cmd.String("output") == "" {
					return usageError("fit needs -o BUNDLE, the model bundle to write")
				}
				if err := checkBundlePath(cmd.String("output")); err != nil {
					return err // before the fit, not after all its work
				}
				lock, err := lockOutput(ctx, cmd.String("output"))
				if err != nil {
					return err
				}
				defer lock.Release()
				ds, err := dataset.Load(cmd.Args().First())
				if err != nil {
					return err
				}
				meas := strings.ToUpper(cmd.String("measurement"))
				if !cmd.IsSet("measurement") && onlyKernelOnly(ds) {
					meas = spec.KernelOnly
					fmt.Fprintln(errw, "fit: the dataset's operator rows are all KERNEL_ONLY: fitting KERNEL_ONLY (--measurement says otherwise)")
				}
				opt := fit.Options{Seed: cmd.Uint64("seed"), Trees: cmd.Int("trees"), Folds: cmd.Int("folds"), Repeats: cmd.String("repeats"), Log: errw}
				model := ""
				if name := cmd.String("model"); name != "" {
					if opt.Model, err = spec.LookupModel(name); err != nil {
						return err
					}
					model = opt.Model.Name
				}
				if ts, err = fit.FromDatasetOf(ds, meas, model); err != nil {
					return err
				}
				if cmd.Bool("check-coverage") { // refuse a bad limit before the fit, not after
					m := opt.Model
					if m == nil {
						m, _ = spec.LookupModel(ts.Model)
					}
					if m != nil {
						if _, err := resolveEngineLimits(cmd, m); err != nil {
							return err
						}
					}
				}
				if b, err = fit.Fit(ts, opt); err != nil {
					return err
				}
				warnFewRows(errw, ts)
				if err := b.Write(cmd.String("output")); err != nil {
					return err
				}
				if err := b.WriteSummary(out); err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %s\n", cmd.String("output"))
			}
			if cmd.Bool("report") {
				if ts == nil {
					return usageError("--report needs a DATASET to fit")
				}
				rows, err := fit.Report(b, ts)
				if err != nil {
					return err
				}
				if err := fit.WriteReport(out, rows); err != nil {
					return err
				}
			}
			if !cmd.Bool("check-coverage") {
				return nil
			}
			return checkCoverage(cmd, b)
		},
	}
}

// checkTableCoverage runs fit --check-coverage against kernel tables:
// every op of the simulation with the table that prices it, the least
// exact answer over the query domain, and the ops left to the built-in
// device model; exit 3 when any op falls back or is extrapolated.
func checkTableCoverage(cmd *cli.Command, dir string) error {
	if cmd.String("model") == "" {
		return usageError("--check-coverage of kernel tables needs --model: the tables price any model")
	}
	m, err := spec.LookupModel(cmd.String("model"))
	if err != nil {
		return err
	}
	limits, err := resolveEngineLimits(cmd, m)
	if err != nil {
		return err
	}
	l, err := layoutFrom(cmd)
	if err != nil {
		return err
	}
	db, err := kerneldb.Open(dir)
	if err != nil {
		return err
	}
	k, err := kerneldb.Load(db, "")
	if err != nil {
		return err
	}
	d, err := spec.LookupDevice(k.Device)
	if err != nil {
		if d, err = spec.LookupDevice(db.GPU); err != nil {
			return fmt.Errorf("kernel tables %s: device %s is not in ftk's catalog", dir, k.Device)
		}
	}
	kt, err := cost.LoadKernelTables(dir, cmd.String("vllm-version"), m, d)
	if err != nil {
		return err
	}
	rows := cost.KernelTablesCoverage(kt, m, l, limits)
	if err := cost.WriteTableCoverage(cmd.Root().Writer, kt, rows); err != nil {
		return err
	}
	for _, r := range rows {
		if !r.Covered() || r.Worst == kerneldb.Extrapolated {
			return cli.Exit("coverage: the simulation leaves the kernel tables (ops above: fallback or extrapolated)", exitCoverage)
		}
	}
	fmt.Fprintln(cmd.Root().Writer, "coverage: every operator of the simulation is inside the kernel tables")
	return nil
}

// checkCoverage runs fit --check-coverage against bundle b.
func checkCoverage(cmd *cli.Command, b *bundle.Bundle) error {
	name := cmd.String("model")
	if name == "" {
		name = b.Model()
	}
	if name == "" {
		return usageError("--check-coverage needs --model: the bundle names no model")
	}
	m, err := spec.LookupModel(name)
	if err != nil {
		return err
	}
	lim, err := resolveEngineLimits(cmd, m)
	if err != nil {
		return err
	}
	l, err := layoutFrom(cmd)
	if err != nil {
		return err
	}
	rep, err := fit.CheckCoverage(b, fit.CoverageRequest{
		Model:    m,
		Layout:   l,
		Limits:   lim,
		Device:   b.Device(),
		GapRatio: cmd.Float64("gap-ratio"),
	})
	if err != nil {
		return usageError("%v", err)
	}
	if err := rep.Print(cmd.Root().Writer); err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		return cli.Exit(err.Error(), exitCoverage)
	}
	fmt.Fprintln(cmd.Root().Writer, "coverage: every operator of the simulation is inside its sampled domain")
	return nil
}

// onlyKernelOnly reports whether every model-specific sample of ds is
// KERNEL_ONLY (a Vidur mlp.csv, say, beside CUDA_EVENT network files):
// then fit's default measurement type would fit no operator of the model.
func onlyKernelOnly(ds *dataset.Dataset) bool {
	ko := false
	for _, s := range ds.Samples {
		if s.Model == "" {
			continue
		}
		if s.Key.Measurement != spec.KernelOnly {
			return false
		}
		ko = true
	}
	return ko
}

// checkBundlePath refuses a bundle path fit could not write: an existing
// folder (the bundle is one file).
func checkBundlePath(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageError("fit: -o %s is a folder; the bundle is one file: name a file such as %s", path, filepath.Join(path, "bundle.arrow"))
	}
	return nil
}

// fewRows is the fewest rows an operator's forest is fitted on without a
// warning: with fewer it predicts those rows' times for every shape.
const fewRows = 3

// warnFewRows warns of operators fitted on fewer than fewRows rows.
func warnFewRows(w io.Writer, ts *fit.TrainingSet) {
	n, example := 0, ""
	for _, o := range ts.Ops {
		if len(o.Rows) < fewRows {
			if n == 0 {
				example = fmt.Sprintf("%s: %d row", o.Key, len(o.Rows))
				if len(o.Rows) != 1 {
					example += "s"
				}
			}
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(w, "fit: warning: %d of %d operators fitted on fewer than %d rows (%s): each predicts its few measured times for every shape, so the bundle extrapolates everywhere; profile more shapes (ftk collect)\n",
			n, len(ts.Ops), fewRows, example)
	}
}
