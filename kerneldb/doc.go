// Package kerneldb reads NVIDIA AIConfigurator's per-operator kernel
// databases (Apache-2.0) as AIConfigurator lays them out:
//
//	<gpu>/<table family>/vllm/<vLLM version>/<table>.parquet
//	<gpu>/<table family>/vllm/<vLLM version>/collection_meta.yaml  (tables measured with that version)
//	<gpu>/<table family>/vllm/<vLLM version>/reuse.yaml            (tables borrowed from another version)
//	<gpu>.yaml                                                      (the GPU's system record, beside <gpu>/)
//
// Open indexes a database; Resolve picks the file a table has for a vLLM
// version (following reuse.yaml); ReadTable reads one parquet file (with
// the parquet reader of github.com/apache/arrow-go) into typed rows, each
// with its device, vLLM version, dtype and kernel source, every latency in
// milliseconds. A bad cell is an error naming the file, the row (0-based,
// as parquet counts) and the column.
//
// The families ftk prices are gemm (gemm_perf), attention
// (context_attention_perf, generation_attention_perf), moe (moe_perf),
// comm (custom_allreduce_perf) and mla (context_mla_perf,
// generation_mla_perf, mla_context_module_perf,
// mla_generation_module_perf). Other tables (quantize, linear attention,
// sparse attention, ...) are listed as not priced.
//
// Lookup (lookup.go) turns rows into shape-indexed tables: a query is
// answered exactly at a measured shape and interpolated between measured
// shapes; the extrapolation rule of each table is stated on its type.
package kerneldb
