// Package bundle is the model bundle format: one Arrow IPC file of
// per-operator predictors (a random forest beside a physical fallback,
// with the sampled domain of each feature) that fit writes and simulate,
// validate and fit --check-coverage read. It holds the reader and the
// evaluator (Load, Predictor.PredictMs, Lookup) and the writer (New,
// Write); the trainer stays in package fit. Layout: docs/formats.md.
package bundle
