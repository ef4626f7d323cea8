// Package runresult is the files of one simulation run, which simulate
// writes and validate reads: config.yaml (Config, the run's every setting,
// so it can be repeated), summary.json (Summary: metrics, memory plan, cost
// model report, step-time breakdown) and the per-request rows
// (requests.csv and requests.arrow, RequestMetrics). Layout:
// docs/formats.md.
package runresult
