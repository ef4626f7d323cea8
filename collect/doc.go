// Package collect plans and runs operator profiling sweeps (ftk collect).
//
// The planner (NewPlan) derives the shapes to measure from the model, the
// parallel layouts and the engine limits: the query domain that fit
// --check-coverage checks (spec.QueryDomain), sampled edge to edge on the
// grids of grid.go, and checked by CheckCoverage. Every shape has a stable
// ID; a plan splits into shards by position (Shard).
//
// A sweep (Run) measures the shapes with a Backend: Synthetic, the
// roofline device model of roofline.Roofline with seeded noise, or a torch
// worker (collect/worker/ftk_worker.py, embedded in the binary) on a GPU or
// the CPU. Rows are appended as they are measured, so an interrupted sweep
// resumes where it stopped; GPU telemetry comes from NVML when the build
// has cgo and the machine a driver.
//
// Output: Out/<device>/<model>/ (plus shard-<i>-of-<n>/ for a shard):
//
//	linear_op.csv, attention.csv, moe.csv        CUDA_EVENT (Frontier columns)
//	<family>_kernel_only.csv                      KERNEL_ONLY
//	<family>_cpu.csv                              CPU (torch worker on the host CPU)
//	network/all_reduce.csv, send_recv.csv         Vidur network columns
//	network/ep_dispatch.csv, ep_combine.csv       the same columns, collective=ep_dispatch|ep_combine
//	network/<collective>_kernel_only.csv          KERNEL_ONLY collectives
//	cpu_overhead.csv                              docs/formats.md CPU overhead schema (HOST_WALL)
//	failures.jsonl                                shapes that failed, with the error
//	ftk-collect.yaml                              device, model, backend, measurement types,
//	                                              layouts, engine limits, shard, plan checksums
//
// Every file starts with the columns of its Frontier (or Vidur) layout in
// the same order and ends with profiling_backend (synthetic or torch),
// impl, kernel_source (the kernel behind each operator:
// spec.KernelSourceCell), device, model_name, shape_id and GPU telemetry
// columns.
package collect
