// Package spec is the vocabulary every ftk stage shares: model architectures
// (read from Hugging Face style config.json files or the built-in catalog),
// parallel layouts, the device catalog, the operator catalog that says which
// operators one transformer layer runs with which per-GPU shapes, and the
// roofline device model that stands in for a GPU when nothing was measured.
//
// Operator names follow the profiling formats in docs/formats.md, so that profiles,
// predictors and simulator queries line up by name.
package spec
