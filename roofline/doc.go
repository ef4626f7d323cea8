// Package roofline is the built-in device cost model: what an operator of
// spec's catalog costs on a catalog device when nothing was measured. It
// prices GPU kernels from their FLOPs and bytes through the fitted curves
// of the device generation's kernel classes (Roofline, Curves), the host
// time of eager execution and of CUDA events, and the host's issue costs
// (IssueOf, IssueCosts) and engine-step overheads (HostOpMs).
//
// A model is built from a device record (NewDevice): the record's public
// figures, its generation's curves and its measured matmul rate's clock
// scale. The calibration behind the constants is in docs/device-model.md.
// collect's synthetic backend, the simulator's cost model (package cost)
// and cmd/ftk use it; the profile and bundle packages (ingest, fit,
// dataset, bundle, runresult) never link it.
package roofline
