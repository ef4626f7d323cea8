// Package validate compares simulated serving runs with measured ones, on
// the same requests and in the numbers users report, and fits the small set
// of global corrections that make the simulator agree with a real engine.
//
// # Runs
//
// A Run is one replay of a request trace, measured on a real engine or
// simulated by ftk simulate, with its per-request metrics. Runs are read from
//
//   - vLLM's serving benchmark result JSON (benchmark_serving.py or
//     "vllm bench serve" with --save-result): input_lens, output_lens,
//     ttfts, itls, errors, duration, model_id (ReadVLLMBenchmark);
//   - a plain per-request CSV (ReadRequestsCSV; columns in its doc);
//   - an ftk simulate output directory (ReadSimulated).
//
// Metrics are those of package spec (TTFT, TPOT, E2E, percentiles by linear
// interpolation) computed from the per-request values the same way for both
// sides; see Metrics for the list.
//
// # Run identity
//
// Each run belongs to a configuration (engine, layout, hardware: a label the
// user chooses), a workload (the trace) and a repetition. The identity comes
// from, in this order:
//
//  1. a manifest (ReadManifest): a YAML file listing every run's path, side,
//     config, workload and repetition;
//  2. the file's own metadata: the keys "config", "workload" and
//     "repetition" at the top level of a vLLM result JSON, as written by
//     "vllm bench serve --metadata config=h100-tp1 workload=conv repetition=2";
//  3. the file or directory name: CONFIG__WORKLOAD or CONFIG__WORKLOAD__rN
//     (fields separated by two underscores), e.g. h100-tp1__conv__r2.json.
//
// A run without a repetition number pairs with every repetition of the same
// configuration and workload on the other side (typically: one simulation,
// several measured repetitions).
//
// # Tables
//
// Compare pairs measured and simulated runs by configuration, workload and
// repetition and computes, per configuration, workload and metric, the
// median over repetitions of each side, the absolute percentage error
// |sim-meas|/|meas| and the signed error (sim-meas)/|meas|; then, per metric
// over all rows, MAPE, median APE, max APE and mean signed error. Runs without
// a partner are listed in the report, never dropped silently.
//
// # Calibration
//
// Calibrate fits a small, named set of global corrections, the fields of
// runresult.Calibration (host time per engine step, per-kernel launch cost, a
// device-time scale per operator family), by running the simulations again
// (Resimulate) with candidate corrections and minimising the MAPE of the
// chosen metrics against the measured runs, with a weak prior keeping
// scales near 1. Corrections that do not move any metric of the fitted runs
// are reported as not fitted and left out of the calibration file. By
// default one workload at a time is held out; the report keeps the error on
// fitted runs and on held-out runs in separate columns.
package validate
