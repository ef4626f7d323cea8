// Package datasets makes and reads request traces: built-in workloads
// (fixed lengths, length distributions of real traces), arrival processes
// (replay, Poisson, bursty) and trace files in the CSV layout of the real
// traces (arrived_at, num_prefill_tokens, num_decode_tokens), with
// optional shared-content columns (content.go: sessions, shared prefixes,
// Mooncake hash ids) that prefix caching reuses.
//
// Traces: ReadTrace and WriteTrace read and write the CSV (arrival times
// optional: HasArrivals tells). Workloads: ParseWorkload reads fixed:PxO,
// splitwise-conv, splitwise-code, arxiv-summarization (traces embedded in
// the binary, ftk.Traces), trace:PATH, shared-prefix:... and sessions:...
// (Conversation). Arrivals: replay, poisson, gamma or stages whose rate
// changes over time (Arrivals). Clients is a closed-loop source: a fixed
// number of clients that wait for each reply (max concurrency, chat
// sessions with think time); RunArrivals opens a simulation's arrivals.
// Generate makes a whole trace; NewSource streams one without holding it,
// allocation-free per request. Both are deterministic for a seed.
//
// Load: RateForLoad turns a fraction of a measured capacity into a rate;
// SearchCapacity and FindCapacity find a capacity by bisection over a
// QueueProbe (search.NewCapacityProbe simulates one),
// using QueueBounded as the definition of a stable system.
//
// Imports and exports: ImportShareGPT reads the public ShareGPT JSON, with
// exact token counts from a Hugging Face tokenizer.json (Tokenizer) or a
// labelled estimate; ImportMooncake reads the Mooncake trace (hash_ids);
// ExportVLLMBench and ExportMooncake write files that
// benchmark clients replay. ComputeStats summarises a trace.
package datasets
