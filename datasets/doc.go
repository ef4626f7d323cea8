// Package datasets makes and reads request traces: built-in workloads
// (fixed lengths, length distributions of real traces), arrival processes
// (replay, Poisson, bursty) and trace files in the CSV layout of the real
// traces (arrived_at, num_prefill_tokens, num_decode_tokens).
package datasets
