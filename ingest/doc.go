// Package ingest turns profiling CSV files (Frontier and Vidur formats, and
// the files ftk collect writes) into ftk's canonical profile dataset: Arrow
// IPC files in one long schema, one file per operator family and
// measurement type (<family>.<MEASUREMENT_TYPE>.arrow), plus a
// manifest.json that records every input with its checksum, row counts and
// the rows that were excluded and why. Load reads a dataset back.
//
// Reading is done by a byte-level CSV scanner that does not allocate per
// cell; every sample keeps its provenance (source path as given and
// 1-based line). A file's family is told from its columns. The measurement
// type of a file is never mixed with another one: CUDA_EVENT, KERNEL_ONLY
// and HOST_WALL samples land in separate files and predictors, and a file
// whose rows disagree fails. Legacy files without a measurement_type
// column are CUDA_EVENT (KERNEL_ONLY when named *_kernel_only.csv), and
// the manifest says so.
//
// How each family becomes samples (one Sample per operator per row):
//
//   - linear_op (and legacy Vidur mlp.csv): every time_stats.<op> column is
//     an operator with the single feature num_tokens, keyed by
//     num_tensor_parallel_workers; a blank cell means the operator was not
//     measured for that row.
//   - attention: prefill rows give attn_prefill with (kv_cache_size,
//     prefill_chunk_size); rows with several prefill sequences are reduced
//     with spec.PrefillEquivalent (variant "mixed"). Decode rows give
//     attn_decode with (batch_size, kv_cache_size). True-mixed rows (prefill
//     and decode in one batch) give both, reduced with spec.PrefillEquivalent
//     and spec.DecodeEquivalent (variant "true_mixed"; the batch composition
//     is a condition, so they are duplicates only of the same composition).
//     The reshape and KV-cache-save ops take num_tokens = all tokens of the
//     row. The attn_decode cells of a prefill-only row and the attn_prefill
//     cells of a decode-only row time an empty call and are not ingested.
//   - moe: gating ops keyed by gating context and routing path; shuffling
//     and grouped GEMM by EP, local experts and routing path; the grouped
//     GEMM's features are (total_routed_tokens, round(tokens_per_expert_avg
//   - max_load_ratio)). The legacy dialect (moe_gating, moe_expert_*) is
//     mapped to the new names.
//   - all_reduce / send_recv: feature size_bytes, keyed by group size.
//   - cpu_overhead: the host-side step parts, measurement HOST_WALL.
//
// Validation: a time cell that is not a number, NaN, negative or zero, a
// min above the median or a median above the max excludes that operator of
// the row; a bad key or feature cell, a wrong field count or a malformed
// record excludes the row. Each exclusion is reported as file:line:column
// with its reason. One exception: a KERNEL_ONLY operator whose statistics
// are all zero launched no GPU kernel (a view such as a reshape) and is
// kept at 0 ms. Duplicated shapes are kept; when their timings disagree
// they are flagged (Sample.Conflict, Manifest.Conflicts).
package ingest
