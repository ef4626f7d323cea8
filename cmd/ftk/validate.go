package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/fit"
	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/progress"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
	"github.com/ftk-dev/ftk/spec"
	"github.com/ftk-dev/ftk/validate"
	"github.com/urfave/cli/v3"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "compare simulated runs with measured ones and fit calibrations",
		Description: `Measured runs: vLLM serving benchmark result JSON (benchmark_serving.py --save-result,
or vllm bench serve --save-result --save-detailed) or a per-request CSV with columns
arrival_s, prompt_tokens, output_tokens, ttft_ms, e2e_ms (required) and request_id,
tpot_ms, status (optional). Simulated runs: ftk simulate output directories.

Each run has a configuration, a workload and a repetition, from (first found):
a --manifest YAML; the keys config, workload, repetition in a vLLM JSON (vllm bench
serve --metadata config=h100-tp1 workload=conv repetition=1); or the file or directory
name CONFIG__WORKLOAD__rN (or CONFIG__WORKLOAD: a run without a repetition pairs with
every repetition of the other side).`,
		Commands: []*cli.Command{validateE2ECommand(), validateCalibrateCommand(), validateOpsCommand()},
	}
}

// runInputFlags are the flags naming the runs to compare.
func runInputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "measured", Aliases: []string{"m"}, Usage: "measured run: vLLM benchmark .json, per-request .csv, or a directory of them (repeatable)"},
		&cli.StringSliceFlag{Name: "simulated", Aliases: []string{"s"}, Usage: "ftk simulate output directory, or a directory of them (repeatable)"},
		&cli.StringFlag{Name: "manifest", Usage: "YAML listing runs: runs: [{path, side: measured|simulated, config, workload, repetition, model}]"},
		&cli.StringSliceFlag{Name: "metrics", Usage: "metrics to add to the defaults (" + strings.Join(validate.DefaultMetricNames, ", ") + "), e.g. ttft_p99_ms,tpot_mean_ms"},
	}
}

// validateInputs reads the runs and metrics the flags name.
func validateInputs(cmd *cli.Command) ([]*validate.Run, []validate.Metric, error) {
	name := "validate " + cmd.Name
	if cmd.Args().Len() > 0 {
		return nil, nil, usageError("%s takes no arguments, got %q: name runs with --measured, --simulated or --manifest", name, cmd.Args().Slice())
	}
	meas, sims, manifest := cmd.StringSlice("measured"), cmd.StringSlice("simulated"), cmd.String("manifest")
	if manifest == "" && (len(meas) == 0 || len(sims) == 0) {
		return nil, nil, usageError("%s needs --measured and --simulated runs, or a --manifest (see 'ftk %s --help')", name, name)
	}
	metrics, err := validate.Metrics(cmd.StringSlice("metrics")...)
	if err != nil {
		return nil, nil, usageError("--metrics: %v", err)
	}
	var runs []*validate.Run
	if manifest != "" {
		if runs, err = validate.ReadManifest(manifest); err != nil {
			return nil, nil, err
		}
	}
	for _, side := range []struct {
		paths []string
		side  validate.Side
	}{{meas, validate.Measured}, {sims, validate.Simulated}} {
		rs, err := validate.ReadRuns(side.paths, side.side)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, rs...)
	}
	return runs, metrics, nil
}

func validateE2ECommand() *cli.Command {
	return &cli.Command{
		Name:      "e2e",
		Usage:     "tabulate simulated against measured runs: per configuration and workload, and per metric",
		ArgsUsage: " ",
		Description: `Pairs measured and simulated runs by configuration, workload and repetition and prints
two tables: per configuration, workload and metric the measured median over repetitions,
the simulated median, the absolute percentage error and the signed error (positive: the
simulator over-predicts); then per metric the paired runs, MAPE, median APE, max APE and
mean signed error. Runs without a partner are listed under the tables. Metrics (vLLM's
definitions, percentiles by linear interpolation) are computed from per-request values
on both sides.

With -o DIR it also writes errors.md, errors.csv, overall.csv, unpaired.csv and, per
configuration and workload, cdf__CONFIG__WORKLOAD.png: the CDFs of TTFT, TPOT and E2E,
measured against simulated.

Examples:
  ftk simulate --model llama-3.1-8b --trace testdata/traces/splitwise_conv.csv -o sim/h100-tp1__conv
  ftk validate e2e --measured bench/ --simulated sim/ -o report
  ftk validate e2e -m h100-tp1__conv__r1.csv -m h100-tp1__conv__r2.csv -s sim/h100-tp1__conv --format markdown
  ftk validate e2e --manifest runs.yaml --metrics ttft_p99_ms,tpot_mean_ms --format csv`,
		Flags: append(runInputFlags(),
			&cli.StringFlag{Name: "format", Value: "text", Usage: "stdout format: text, markdown or csv (csv: the per-row table, a blank line, the per-metric table)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "directory for the Markdown and CSV tables and the CDF plots (PNG)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			format := cmd.String("format")
			if format != "text" && format != "markdown" && format != "csv" {
				return usageError("--format %q: want text, markdown or csv", format)
			}
			runs, metrics, err := validateInputs(cmd)
			if err != nil {
				return err
			}
			rep, err := validate.Compare(runs, metrics)
			if err != nil {
				return err
			}
			w := cmd.Root().Writer
			switch format {
			case "markdown":
				err = rep.WriteMarkdown(w)
			case "csv":
				if err = rep.WriteCSV(w); err == nil {
					fmt.Fprintln(w)
					err = rep.WriteOverallCSV(w)
				}
			default:
				err = rep.WriteText(w)
			}
			if err != nil {
				return err
			}
			if dir := cmd.String("output"); dir != "" {
				lock, err := lockOutput(ctx, dir)
				if err != nil {
					return err
				}
				defer lock.Release()
				files, err := rep.WriteFiles(dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.Root().ErrWriter, "wrote %d files to %s\n", len(files), dir)
			}
			return nil
		},
	}
}

func validateCalibrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "calibrate",
		Usage:     "fit global corrections (host scale, host speed, per-kind issue and per-family scales) to measured runs",
		ArgsUsage: " ",
		Description: `Runs the simulations again (from their output directories: same configuration, same
requests) with candidate corrections and fits them to the measured runs, minimising the
MAPE of the metrics (rounds of CMA-ES and Nelder-Mead, seeded: the same inputs give the
same file).
Corrections: host_scale (a factor on the modelled host time of every engine step:
scheduling, input preparation, sampling, output processing), host_speed (a factor on
every host issue cost of the forward pass), issue_scale.aten / custom / triton /
attention / collective (the issue cost of one kernel kind), family_scale.linear_op /
attention / moe / collective (device time of an operator family). Each is first probed on
the fitted runs (a factor at x1.5 and /1.5, the host scale at x4 and x7) and fitted only
when the runs identify it: it moves their metrics evenly (not a host cost hidden behind
the GPU until raised, nor steps reshuffled), and by at least 10% beyond what the coarser
corrections already fitted do (order: host scale, family scales, host speed, issue
scales; VIF at most 10). The others keep their start and stay out of the file; the
report says why for each. The search runs in coordinates whitened by the probed slopes,
so overlapping corrections do not trap it in a narrow valley. Weak prior: fitted factors
stay near 1 unless the runs say otherwise (1 MAPE point x ln(ratio)^2: a scale of 1.25
costs 0.05 points; the host scale is free within x10 either way). In eager runs the
host scale is a few percent of a host-bound step and only loosely pinned next to
host_speed: runs of the same host with CUDA graphs pin it.

Split: by default leave one workload out (one fit per workload without it, whose error
on it is the held-out column, then a final fit on all workloads, written to -o);
--fit-workloads fits on those workloads and holds the others out. The report shows the
error before calibration, on the fitted runs and on the held-out runs in separate columns.

The calibration YAML is what 'ftk simulate --calibration FILE' reads.

Examples:
  ftk validate calibrate --measured bench/ --simulated sim/ -o calibration.yaml
  ftk validate calibrate -m bench/ -s sim/ --fit-workloads conv --params host_scale,linear_op -o cal.yaml
  ftk simulate --model llama-3.1-8b --trace testdata/traces/splitwise_code.csv --calibration cal.yaml -o sim2`,
		Flags: append(runInputFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "calibration YAML to write (required)"},
			&cli.StringSliceFlag{Name: "fit-workloads", Usage: "workloads to fit on; the others are held out (default: leave one workload out)"},
			&cli.StringSliceFlag{Name: "params", Usage: "corrections to fit (default: all): " + strings.Join(validate.CalibrationParams(), ", ")},
			&cli.IntFlag{Name: "max-evaluations", Value: 1000, Usage: "most evaluations of the objective per fit (each simulates every fitted run once)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "stdout format: text or csv"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			out, format := cmd.String("output"), cmd.String("format")
			if out == "" {
				return usageError("validate calibrate needs -o FILE for the calibration YAML")
			}
			if format != "text" && format != "csv" {
				return usageError("--format %q: want text or csv", format)
			}
			if n := cmd.Int("max-evaluations"); n < 10 {
				return usageError("--max-evaluations %d: want at least 10", n)
			}
			if err := validate.CheckParams(cmd.StringSlice("params")); err != nil {
				return usageError("--params: %v", err)
			}
			lock, err := lockOutput(ctx, out)
			if err != nil {
				return err
			}
			defer lock.Release()
			runs, metrics, err := validateInputs(cmd)
			if err != nil {
				return err
			}
			var bar *progress.Bar
			rep, err := validate.Calibrate(runs, validate.CalibrateOptions{
				Metrics: metrics, FitWorkloads: cmd.StringSlice("fit-workloads"), Params: cmd.StringSlice("params"),
				MaxEvaluations: cmd.Int("max-evaluations"), LoadPredictors: loadBundlePredictors, Simulate: simulate.Replay,
				Progress: func(done, total int) {
					if bar == nil && done == 1 {
						bar = progress.New(cmd.Root().ErrWriter, "calibrate", "evaluations (at most)", total)
					}
					bar.Set(done)
				},
			})
			bar.Close(err == nil)
			if err != nil {
				return err
			}
			if err := rep.WriteCalibrationFile(out); err != nil {
				return err
			}
			write := rep.WriteText
			if format == "csv" {
				write = rep.WriteCSV
			}
			if err := write(cmd.Root().Writer); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.Root().ErrWriter, "wrote %s\n", out)
			return err
		},
	}
}

func validateOpsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ops",
		Usage:     "per-operator error of a fit bundle on a profile dataset",
		ArgsUsage: "BUNDLE DATASET",
		Description: `Predicts every row of a profile dataset (ftk ingest output) of the bundle's measurement
type with the bundle's predictors and prints, per operator, MAPE, P50/P90/max APE, rows
outside the sampled domain, and the bundle's own cross-validated and holdout MAPE. Run it
on a dataset the bundle was not trained on for an out-of-sample check.

Examples:
  ftk validate ops bundle.arrow profiles-ds/`,
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 2 {
				return usageError("validate ops needs two arguments, BUNDLE and DATASET, got %d", cmd.Args().Len())
			}
			return fit.ReportDataset(cmd.Root().Writer, cmd.Args().Get(0), cmd.Args().Get(1))
		},
	}
}

// loadBundlePredictors opens what a simulated run's --bundle names for
// re-simulation: kernel tables for the run's model, device and vLLM
// version (as simulate loads them), or a fit bundle for the model and
// device it was fitted on.
func loadBundlePredictors(cfg runresult.Config) (cost.PredictorSet, error) {
	path := cfg.Bundle
	if kerneldb.IsDatabase(path) {
		m, err := spec.LookupModel(cfg.Model)
		if err != nil {
			return nil, fmt.Errorf("kernel tables %s: %w", path, err)
		}
		if m, err = m.WithKVCacheDtype(cfg.Engine.KVCacheDtype); err != nil {
			return nil, fmt.Errorf("kernel tables %s: %w", path, err)
		}
		d, err := spec.LookupDevice(cfg.Device)
		if err != nil {
			return nil, fmt.Errorf("kernel tables %s: %w", path, err)
		}
		return cost.LoadPredictors(path, cfg.VLLMVersion, m, d)
	}
	b, err := bundle.Load(path)
	if err != nil {
		return nil, err
	}
	m, err := spec.LookupModel(b.Model())
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	d, err := spec.LookupDevice(b.Device())
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	return cost.LoadBundle(path, m, d)
}
