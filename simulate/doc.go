// Package simulate is a discrete-event simulator of LLM serving with the
// semantics of vLLM's V1 engine: it replays a request trace (or a generated
// workload) against one or more engine replicas and reports the latency and
// throughput a deployment would see.
//
// The parts plug together behind small interfaces:
//
//   - Loop is the event core: a priority queue of timed events, ties broken
//     by priority (arrivals before engine events) and then insertion order,
//     dispatched to Actors. It knows nothing of engines.
//   - An engine is one serving replica. Its scheduling policy (scheduler.go:
//     token budget, max sequences, chunked prefill, running before waiting,
//     paged KV cache, preemption by recompute) is separate from its timing
//     mechanics (engine.go: steps, pipeline stages, batches in flight).
//   - The KV cache either counts blocks or, with prefix caching (on by
//     default, as in V1), is vLLM's block pool (prefixcache.go): blocks
//     cached under hashes chained from the first block, named from the
//     request's shared-content ids (blockcontent.go), never from tokens;
//     a least-recently-used free queue; hits shorten the prefill.
//   - CostModel prices one engine step on one pipeline stage and returns a
//     breakdown by component (cost.StepCost). Package cost implements it
//     (operators, predictors, roofline, launch, host, MoE, collectives);
//     the engine sees only the interface. With async scheduling the engine
//     hides host time behind the forward pass before it (StepCost.WallMs)
//     and, like vLLM's batch queue, runs a request that arrives while a
//     batch is in flight one batch later (engine.Admit).
//   - Router spreads arriving requests over replicas; Source yields the
//     arrivals one at a time, so a trace of any length runs in bounded memory.
//     A FeedbackSource (closed-loop clients) is also told of every
//     completion and sends what waited on it.
//   - In a disaggregated run (disagg.go) prefill instances run prompts and
//     hand each request's KV cache over a shared link (kvlink.go) to a
//     decode instance that has blocks for it.
//
// Metrics follow spec (TTFT, TPOT, ITL, E2E, percentiles) and are written as
// per-request CSV and Arrow files, a summary JSON that embeds the full
// configuration and the step-time breakdown by component, and optionally a
// Chrome trace.
package simulate
