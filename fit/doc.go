// Package fit turns a profile dataset into per-operator latency predictors
// and writes them as a model bundle (package bundle) (docs/design.md section 1).
//
// Each predictor is a regression random forest trained on one operator key
// (operator, measurement type, TP, and the MoE / collective conditions of
// spec.OpKey) beside a physical fallback: a non-negative linear model of the
// operator's FLOPs and bytes (spec.Op.Work). The forest learns the logarithm
// of the ratio of the measured median time to the fallback, so between
// samples the physics carries the interpolation and the forest the
// corrections. Queries outside the sampled domain are answered by the edge
// value plus the physical increment, and counted.
//
// Training: histogram (quantile-binned) split search, bootstrap samples, a
// random feature subset per split, depth and minimum-leaf limits, trees
// trained in parallel, deterministic for a seed. Prediction: a forest on
// the operator's base features compiles, on its predictor's first query,
// into an exact lookup grid (the product of the intervals its split
// thresholds cut each feature into); a forest too large for that walks one
// flattened node array.
//
// The bundle is one Arrow IPC file: a node table (predictor, tree, node,
// feature, threshold, left, right, value) and, in the schema metadata, a
// JSON document with everything else (see bundle.Meta). Package bundle
// reads, evaluates and writes it; this package trains.
package fit
