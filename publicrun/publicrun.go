// Package publicrun holds the published vLLM serving runs ftk is checked
// against: one YAML record a run (runs/*.yaml, embedded), with its source,
// the setup to replay, what was measured, and the error each metric may
// reach. The simulator's tests replay every record and write
// docs/validation.md from the same records (make validation), so the
// figures there and the assertions cannot drift apart.
package publicrun

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/spec"
	"go.yaml.in/yaml/v3"
)

//go:embed runs/*.yaml
var files embed.FS

// Roles of a run: fitted (a constant of ftk was chosen on it) or held out.
const (
	RoleFitted  = "fitted"
	RoleHeldOut = "held out"
)

// Metrics a record may give, named as ftk's summary.json names them, and
// speedup: a run with speculative decoding's output throughput over the
// same run's without it (the replay runs both).
var Metrics = []string{"tpot_mean_ms", "ttft_mean_ms", "itl_p50_ms", "e2e_mean_ms", "output_tok_s", "speedup"}

// MetricLabels are the metrics' names in docs/validation.md.
var MetricLabels = map[string]string{
	"tpot_mean_ms": "mean TPOT (ms)",
	"ttft_mean_ms": "mean TTFT (ms)",
	"itl_p50_ms":   "median decode step (ms)",
	"e2e_mean_ms":  "mean E2E (ms)",
	"output_tok_s": "output throughput (tok/s)",
	"speedup":      "speculative speedup (output tok/s over none)",
}

// Run is one published run.
type Run struct {
	Name   string `yaml:"name"`
	Group  string `yaml:"group"` // runs compared with each other (e.g. one benchmark's files)
	Source Source `yaml:"source"`
	Role   string `yaml:"role"`
	// FittedWhat names what was fitted on a fitted run.
	FittedWhat string   `yaml:"fitted_what,omitempty"`
	Setup      Setup    `yaml:"setup"`
	Workload   Workload `yaml:"workload"`
	// Measured is each metric as the source reports it.
	Measured map[string]float64 `yaml:"measured"`
	// MaxErrorPct bounds ftk's |error| on each measured metric, in percent:
	// on held-out runs regression guards a few points beyond today's error,
	// not targets.
	MaxErrorPct map[string]float64 `yaml:"max_error_pct"`
	// MaxAbovePct, when set, bounds how far ftk may be above each listed
	// metric (signed, percent): runs ftk must not over-predict.
	MaxAbovePct map[string]float64 `yaml:"max_above_pct,omitempty"`
	Note        string             `yaml:"note,omitempty"`
}

// Source says where a run was published.
type Source struct {
	Title string `yaml:"title"` // e.g. vLLM issue #45709
	URL   string `yaml:"url"`
	Date  string `yaml:"date"` // when the run was made or published, as precise as the source
	// Detail is the setup as the source states it.
	Detail string `yaml:"detail"`
}

// Setup is the engine and hardware the run is replayed on. Zero values take
// ftk's defaults (vLLM V1's).
type Setup struct {
	Model  string `yaml:"model"` // catalog name, or a config.json path from the repository root
	Device string `yaml:"device"`
	TP     int    `yaml:"tp"`
	EP     int    `yaml:"ep,omitempty"`
	DP     int    `yaml:"dp,omitempty"`
	// ExecutionMode is eager, cuda-graph or piecewise.
	ExecutionMode       string `yaml:"execution_mode,omitempty"`
	MaxNumBatchedTokens int    `yaml:"max_num_batched_tokens,omitempty"`
	MaxNumSeqs          int    `yaml:"max_num_seqs,omitempty"`
	MaxModelLen         int    `yaml:"max_model_len,omitempty"`
	// GPUMemoryUtilization and NumGPUBlocksOverride size the KV cache as
	// vLLM's flags of those names do.
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization,omitempty"`
	NumGPUBlocksOverride int     `yaml:"num_gpu_blocks_override,omitempty"`
	// Router is round-robin or least-loaded (vLLM's DP load balancer).
	Router          string `yaml:"router,omitempty"`
	AsyncScheduling bool   `yaml:"async_scheduling,omitempty"`
	// NoChunkedPrefill and NoPrefixCaching turn off what V1 has on.
	NoChunkedPrefill bool `yaml:"no_chunked_prefill,omitempty"`
	NoPrefixCaching  bool `yaml:"no_prefix_caching,omitempty"`
	// SpeculativeConfig is the run's speculative decoding as vLLM's
	// --speculative-config gives it (method, num_speculative_tokens,
	// model), with the acceptance the replay draws from: the run's own
	// per-position rates (acceptance) or a record's dataset (dataset).
	// Nil: none.
	SpeculativeConfig *spec.Speculative `yaml:"speculative_config,omitempty"`
}

// Workload is the requests of a run.
type Workload struct {
	// Kind is clients (closed-loop clients, each sending its next request
	// when its reply is complete: vllm bench serve --max-concurrency),
	// spaced (one request every GapS seconds), at-once (every request at
	// t=0, with Prompts and Outputs per request), poisson (RateRPS for
	// DurationS seconds) or trace (Trace, a trace CSV from the repository
	// root, replayed as recorded; its measured metrics are recomputed from
	// the vLLM server timestamps it carries: queued_s, first_token_s,
	// last_token_s).
	Kind      string  `yaml:"kind"`
	Requests  int     `yaml:"requests,omitempty"`
	Prompt    int     `yaml:"prompt,omitempty"`
	Output    int     `yaml:"output,omitempty"`
	Clients   int     `yaml:"clients,omitempty"`
	GapS      float64 `yaml:"gap_s,omitempty"`
	RateRPS   float64 `yaml:"rate_rps,omitempty"`
	DurationS float64 `yaml:"duration_s,omitempty"`
	Prompts   []int   `yaml:"prompts,omitempty"`
	Outputs   []int   `yaml:"outputs,omitempty"`
	Seed      uint64  `yaml:"seed,omitempty"`
	Trace     string  `yaml:"trace,omitempty"`
}

// Load reads every record, in file-name order.
func Load() ([]Run, error) {
	names, err := files.ReadDir("runs")
	if err != nil {
		return nil, err
	}
	var runs []Run
	seen := map[string]bool{}
	for _, e := range names {
		p := path.Join("runs", e.Name())
		data, err := files.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r Run
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("publicrun/%s: %w", p, err)
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("publicrun/%s: %w", p, err)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("publicrun/%s: a second run named %q", p, r.Name)
		}
		seen[r.Name] = true
		runs = append(runs, r)
	}
	return runs, nil
}

// check refuses a record that could not be replayed or checked.
func (r Run) check() error {
	switch {
	case r.Name == "" || r.Source.Title == "" || r.Source.URL == "" || r.Source.Date == "":
		return fmt.Errorf("name, source title, url and date are required")
	case r.Role != RoleFitted && r.Role != RoleHeldOut:
		return fmt.Errorf("role %q: want %q or %q", r.Role, RoleFitted, RoleHeldOut)
	case r.Role == RoleFitted && r.FittedWhat == "":
		return fmt.Errorf("a fitted run names what was fitted on it (fitted_what)")
	case r.Setup.Model == "" || r.Setup.Device == "":
		return fmt.Errorf("setup needs model and device")
	case len(r.Measured) == 0:
		return fmt.Errorf("no measured metric")
	}
	if sc := r.Setup.SpeculativeConfig; sc != nil {
		if err := sc.Validate(); err != nil {
			return err
		}
		if !sc.Enabled() {
			return fmt.Errorf("speculative_config without num_speculative_tokens: drop it for a run without speculative decoding")
		}
	}
	if _, ok := r.Measured["speedup"]; ok && r.Setup.SpeculativeConfig == nil {
		return fmt.Errorf("measured speedup needs a speculative_config (the speedup of what over the same run without it)")
	}
	for m, v := range r.Measured {
		if !slices.Contains(Metrics, m) {
			return fmt.Errorf("measured %q: not one of %v", m, Metrics)
		}
		if v <= 0 {
			return fmt.Errorf("measured %s %g: want > 0", m, v)
		}
		if r.MaxErrorPct[m] <= 0 {
			return fmt.Errorf("measured %s has no max_error_pct", m)
		}
	}
	for m := range r.MaxErrorPct {
		if _, ok := r.Measured[m]; !ok {
			return fmt.Errorf("max_error_pct %s: not measured", m)
		}
	}
	w := r.Workload
	switch w.Kind {
	case "clients":
		if w.Clients <= 0 || w.Requests <= 0 || w.Prompt <= 0 || w.Output <= 0 {
			return fmt.Errorf("a clients workload needs clients, requests, prompt and output")
		}
	case "spaced":
		if w.GapS <= 0 || w.Requests <= 0 || w.Prompt <= 0 || w.Output <= 0 {
			return fmt.Errorf("a spaced workload needs gap_s, requests, prompt and output")
		}
	case "at-once":
		if len(w.Prompts) == 0 || len(w.Prompts) != len(w.Outputs) {
			return fmt.Errorf("an at-once workload needs prompts and outputs of one length")
		}
	case "poisson":
		if w.RateRPS <= 0 || w.DurationS <= 0 || w.Prompt <= 0 || w.Output <= 0 {
			return fmt.Errorf("a poisson workload needs rate_rps, duration_s, prompt and output")
		}
	case "trace":
		if w.Trace == "" {
			return fmt.Errorf("a trace workload needs trace, the CSV's path from the repository root")
		}
	default:
		return fmt.Errorf("workload kind %q: want clients, spaced, at-once, poisson or trace", w.Kind)
	}
	return nil
}

// ErrorPct is ftk's signed error on a measured value, in percent.
func ErrorPct(ftk, measured float64) float64 {
	return 100 * (ftk - measured) / measured
}
