// Package search finds the best deployment of a model for a workload and a
// latency target: it enumerates candidate deployments (device, TP/PP/EP
// layout, replicas or prefill:decode instances, engine limits, execution
// mode), asks the simulator which of them it accepts, finds for each the
// highest request rate whose simulated latency percentiles meet the SLO
// (a search on a fixed geometric grid of rates, so that the answer does not
// depend on where the search started), and ranks them by goodput per GPU or
// by cost. Candidates that cannot enter the top K are pruned with one
// simulation. Every candidate's result is its own file, written
// atomically, so a killed search resumes and shards of a search (a Slurm
// array or a Kubernetes Indexed Job, see package batchjob) merge by
// running the search again over the shared folder.
//
// search sits above the stages: it composes simulate and datasets, and no
// stage imports it.
package search
