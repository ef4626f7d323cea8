// Package cost is the cost model of an engine step: what one step of a
// batch takes on one pipeline stage, by component (StepCost), the step
// being host time before, max(device, launch), host time after.
//
// OpCostModel walks the per-GPU operator list of the layers
// (spec.LayerOps) and asks, per operator, a profiled predictor
// (PredictorSet, from a model bundle) or the built-in roofline device model
// (roofline.Roofline). MoE layers draw per-expert token counts every step and
// wait for the slowest EP rank (moe_router.go, moe_tables.go); the launch
// term follows the execution mode (execmode.go: eager, CUDA graph,
// piecewise); host time comes from a CPU-overhead profile, a calibration or
// roofline's default host model (host.go); collectives are priced per layer.
//
// The package never sees engine state: package simulate hands it a
// BatchShape and reads back a StepCost, behind simulate's CostModel
// interface.
package cost
