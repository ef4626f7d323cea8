// Package spec is the vocabulary every ftk stage shares: model architectures
// (read from Hugging Face style config.json files or the built-in catalog),
// parallel layouts, the device catalog, the operator catalog that says which
// operators one transformer layer runs with which per-GPU shapes and what
// work they do (FLOPs and bytes), the query domain, the engine limits and
// the metric definitions. What an operator costs on a device is the
// roofline package's.
//
// Operator names follow the profiling formats in docs/formats.md, so that profiles,
// predictors and simulator queries line up by name.
package spec
