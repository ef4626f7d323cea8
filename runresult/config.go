package runresult

import (
	"errors"
	"fmt"
	"github.com/ftk-dev/ftk/spec"
	"go.yaml.in/yaml/v3"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Config records every setting of a simulation, so that a run can be
// repeated from its output (summary.json embeds it; config.yaml is it).
type Config struct {
	Model    string         `json:"model" yaml:"model"`   // catalog name or config.json path
	Device   string         `json:"device" yaml:"device"` // device catalog name
	Layout   spec.Layout    `json:"layout" yaml:"layout"` // DP is the number of engine replicas
	Engine   EngineConfig   `json:"engine" yaml:"engine"`
	Router   string         `json:"router" yaml:"router"` // round-robin or least-loaded
	Workload WorkloadConfig `json:"workload" yaml:"workload"`
	// Bundle is a fit model bundle, or kernel tables (an AIConfigurator
	// database or ftk ingest's copy of one); empty means the built-in
	// roofline.
	Bundle string `json:"bundle,omitempty" yaml:"bundle,omitempty"`
	// VLLMVersion is the vLLM release simulated ("" : ftk's defaults, and
	// the newest kernel tables): it picks the kernel tables' version
	// folder and the engine defaults of that release (vllmdefaults.go).
	VLLMVersion string `json:"vllm_version,omitempty" yaml:"vllm_version,omitempty"`
	// HostBundle is a fit bundle of HOST_WALL predictors (the CPU overhead
	// profile's cpu_schedule, cpu_prepare_inputs, cpu_sampler,
	// cpu_process_outputs); empty means host time from Bundle's HOST_WALL
	// predictors if it has any, else spec's default host model.
	HostBundle  string      `json:"host_bundle,omitempty" yaml:"host_bundle,omitempty"`
	Calibration Calibration `json:"calibration" yaml:"calibration"`
	MoE         MoEConfig   `json:"moe" yaml:"moe"`
	// Mode is ModeColocated (one engine type serves whole requests) or
	// ModeDisaggregated (prefill and decode instances, see Disaggregation).
	Mode           string               `json:"mode" yaml:"mode"`
	Disaggregation DisaggregationConfig `json:"disaggregation,omitzero" yaml:"disaggregation,omitempty"`
}

// EngineConfig holds the vLLM engine options the simulator honours, named
// as vLLM names them.
type EngineConfig struct {
	// EngineLimits (max_num_batched_tokens, max_num_seqs, max_model_len,
	// block_size) are spec's, resolved and checked by
	// spec.EngineLimits.Resolve.
	spec.EngineLimits    `yaml:",inline"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization" yaml:"gpu_memory_utilization"`
	// LongPrefillTokenThreshold caps the prompt tokens one request may
	// schedule in one step (0: no cap).
	LongPrefillTokenThreshold int  `json:"long_prefill_token_threshold" yaml:"long_prefill_token_threshold"`
	EnableChunkedPrefill      bool `json:"enable_chunked_prefill" yaml:"enable_chunked_prefill"`
	// NumGPUBlocksOverride replaces the KV-cache block count derived from
	// memory (0: derive it), as vLLM's --num-gpu-blocks-override.
	NumGPUBlocksOverride int `json:"num_gpu_blocks_override" yaml:"num_gpu_blocks_override"`
	// ExecutionMode is ExecEager, ExecCUDAGraph or ExecPiecewise; empty
	// means CUDA graphs when op times are KERNEL_ONLY and eager when they
	// are CUDA_EVENT (New resolves it).
	ExecutionMode string `json:"execution_mode" yaml:"execution_mode"`
	// MaxCUDAGraphCaptureSize is the largest batch captured in a CUDA graph
	// (vLLM's max_cudagraph_capture_size); 0 means vLLM's default,
	// min(2 x max_num_seqs, 512), capped by max_num_batched_tokens.
	MaxCUDAGraphCaptureSize int `json:"max_cudagraph_capture_size" yaml:"max_cudagraph_capture_size"`
	// AsyncScheduling overlaps the host work of a step with the GPU work of
	// the step before it (vLLM's --async-scheduling).
	AsyncScheduling bool `json:"async_scheduling" yaml:"async_scheduling"`
	// EnablePrefixCaching reuses the KV blocks of prompt prefixes already
	// computed (vLLM's --enable-prefix-caching, on by default in V1; see
	// prefixCache); in disaggregated runs, on the prefill instances.
	EnablePrefixCaching bool `json:"enable_prefix_caching" yaml:"enable_prefix_caching"`
	// KVCacheDtype is vLLM's --kv-cache-dtype: "" or auto (the model's
	// dtype), bfloat16, fp8, fp8_e4m3 or fp8_e5m2; fp8 halves the KV bytes
	// per token (more blocks) and the bytes decode attention reads.
	KVCacheDtype string `json:"kv_cache_dtype,omitempty" yaml:"kv_cache_dtype,omitempty"`
	// SpeculativeConfig is vLLM's --speculative-config (nil: no
	// speculative decoding), with the acceptance the run drew from.
	SpeculativeConfig *spec.Speculative `json:"speculative_config,omitempty" yaml:"speculative_config,omitempty"`
	// KVOffloadingSize is vLLM's --kv-offloading-size with the native
	// backend: GiB of host memory (2^30 bytes) holding KV blocks copied
	// from the GPUs of one engine, all its TP and PP ranks together (0: no
	// host tier). It needs prefix caching and a co-located run
	// (docs/kv-offloading.md).
	KVOffloadingSize float64 `json:"kv_offloading_size,omitempty" yaml:"kv_offloading_size,omitempty"`
}

// WorkloadConfig names the arrivals: a trace file or a generated workload.
type WorkloadConfig struct {
	Trace string `json:"trace,omitempty" yaml:"trace,omitempty"`
	// Workload is a generated workload as datasets.ParseWorkload reads it:
	// fixed:PROMPTxOUTPUT, a built-in trace-backed one (splitwise-conv,
	// ...) or trace:PATH.
	Workload string `json:"workload,omitempty" yaml:"workload,omitempty"`
	// RatePerS is the Poisson arrival rate of a generated workload, or the
	// rate a trace's recorded arrivals are scaled to (0: as recorded). With
	// no rate and no recorded times every request arrives at time zero.
	RatePerS float64 `json:"rate" yaml:"rate"`
	// NumRequests is the size of a generated workload, or the first
	// requests of a trace to replay (0: all of a trace).
	NumRequests int    `json:"num_requests" yaml:"num_requests"`
	Seed        uint64 `json:"seed" yaml:"seed"`
	// Stages replace the rate by Poisson arrivals whose rate changes over
	// time: "DURATIONs@RATE,...", e.g. "60s@2,120s@8" (the last rate
	// holds after its stage).
	Stages string `json:"stages,omitempty" yaml:"stages,omitempty"`
	// Clients, when positive, sends the requests from that many
	// closed-loop clients, each waiting for its reply before it sends
	// again (vllm bench serve --max-concurrency); a sessions:... workload
	// runs turn by turn. The rate or stages then pace session starts (0:
	// back to back).
	Clients int `json:"clients,omitempty" yaml:"clients,omitempty"`
	// ThinkS is the clients' mean think time, seconds, between a reply and
	// the session's next turn (exponential).
	ThinkS float64 `json:"think_s,omitempty" yaml:"think_s,omitempty"`
}

// Source names what the workload replays or generates: "trace PATH" or
// "NAME (generated)".
func (w *WorkloadConfig) Source() string {
	if w.Trace != "" {
		return "trace " + w.Trace
	}
	return w.Workload + " (generated)"
}

// Router names.
const (
	RouterRoundRobin  = "round-robin"
	RouterLeastLoaded = "least-loaded"
)

// DefaultConfig returns the defaults of vLLM V1 (chunked prefill and prefix
// caching on, 8192 batched tokens, 256 sequences, 16-token blocks, 90% of
// GPU memory) on one
// H100 with the round-robin router.
func DefaultConfig() Config {
	return Config{
		Device: "h100",
		Layout: spec.Layout{TP: 1, PP: 1, EP: 1, DP: 1},
		Engine: EngineConfig{
			EngineLimits:         spec.DefaultEngineLimits(),
			GPUMemoryUtilization: 0.9,
			EnableChunkedPrefill: true,
			EnablePrefixCaching:  true,
		},
		Router:   RouterRoundRobin,
		Workload: WorkloadConfig{Seed: spec.DefaultSeed},
	}
}

// LoadConfig reads a YAML config on top of DefaultConfig. Unknown keys are
// errors: a misspelt engine option must not be silently ignored.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := DecodeYAML(data, &cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// WriteYAML writes cfg as YAML, the form LoadConfig reads.
func (c *Config) WriteYAML(w io.Writer) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return err
	}
	return enc.Close()
}

// ErrNoModel is Validate's error for a config that names no model.
var ErrNoModel = errors.New("simulate config: no model given")

// WithAbsolutePaths returns c with every file it names (bundle, host
// bundle, trace, MoE histogram, a model's config.json) made absolute, as a
// run's config.yaml stores them: a rerun from another working directory
// ("ftk simulate --config out/config.yaml" from anywhere) finds the same
// files. Catalog names and unset paths are left as they are.
func (c Config) WithAbsolutePaths() Config {
	abs := func(p *string) {
		if *p == "" || filepath.IsAbs(*p) {
			return
		}
		if a, err := filepath.Abs(*p); err == nil {
			*p = a
		}
	}
	abs(&c.Bundle)
	abs(&c.HostBundle)
	abs(&c.Workload.Trace)
	abs(&c.MoE.Histogram)
	if rest, ok := strings.CutPrefix(c.Workload.Workload, "trace:"); ok {
		abs(&rest)
		c.Workload.Workload = "trace:" + rest
	}
	if st, err := os.Stat(c.Model); err == nil && !st.IsDir() && !filepath.IsAbs(c.Model) {
		abs(&c.Model)
	}
	return c
}

// Validate checks the settings that do not need the model or device (the
// first part of simulate.Resolve).
func (c *Config) Validate() error {
	e := &c.Engine
	bad := func(format string, a ...any) error { return fmt.Errorf("simulate config: "+format, a...) }
	switch {
	case c.Model == "":
		return ErrNoModel
	case e.EngineLimits.Validate() != nil:
		return bad("%v", e.EngineLimits.Validate())
	case !(e.GPUMemoryUtilization > 0 && e.GPUMemoryUtilization <= 1):
		return bad("gpu_memory_utilization must be in (0, 1], got %g", e.GPUMemoryUtilization)
	case e.LongPrefillTokenThreshold < 0:
		return bad("long_prefill_token_threshold must not be negative, got %d", e.LongPrefillTokenThreshold)
	case e.NumGPUBlocksOverride < 0:
		return bad("num_gpu_blocks_override must not be negative, got %d", e.NumGPUBlocksOverride)
	case !(e.KVOffloadingSize >= 0) || math.IsInf(e.KVOffloadingSize, 0):
		return bad("kv_offloading_size must be a finite number of GiB >= 0, got %g", e.KVOffloadingSize)
	case e.KVOffloadingSize > 0 && !e.EnablePrefixCaching:
		return bad("kv_offloading_size %g needs prefix caching: the host tier keeps blocks by their prefix hashes (drop --no-enable-prefix-caching)", e.KVOffloadingSize)
	case e.KVOffloadingSize > 0 && c.Mode == ModeDisaggregated:
		return bad("kv_offloading_size with mode %s is not modelled: the host tier is simulated for co-located engines", ModeDisaggregated)
	case c.Router != RouterRoundRobin && c.Router != RouterLeastLoaded:
		return bad("unknown router %q: use %s or %s", c.Router, RouterRoundRobin, RouterLeastLoaded)
	}
	w := &c.Workload
	switch {
	case w.RatePerS < 0:
		return bad("rate must not be negative, got %g", w.RatePerS)
	case w.NumRequests < 0:
		return bad("num_requests must not be negative, got %d", w.NumRequests)
	case w.Clients < 0:
		return bad("clients must not be negative, got %d", w.Clients)
	case !(w.ThinkS >= 0) || math.IsInf(w.ThinkS, 0):
		return bad("think_s must be a finite number of seconds >= 0, got %g", w.ThinkS)
	}
	if err := c.MoE.Validate(); err != nil {
		return err
	}
	if c.VLLMVersion != "" {
		if _, err := versionParts(c.VLLMVersion); err != nil {
			return err
		}
	}
	switch e.ExecutionMode {
	case "", ExecEager, ExecCUDAGraph, ExecPiecewise, ExecFullAndPiecewise:
	default:
		return bad("unknown execution_mode %q: use %s", e.ExecutionMode, strings.Join(ExecutionModes, ", "))
	}
	if _, err := spec.KVCacheBytes(e.KVCacheDtype); err != nil {
		return bad("%v", err)
	}
	if err := e.SpeculativeConfig.Validate(); err != nil {
		return bad("%v", err)
	}
	if e.MaxCUDAGraphCaptureSize < 0 {
		return bad("max_cudagraph_capture_size must not be negative, got %d", e.MaxCUDAGraphCaptureSize)
	}
	switch c.Mode {
	case "", ModeColocated:
	case ModeDisaggregated:
		if err := c.Disaggregation.Validate(); err != nil {
			return err
		}
	default:
		return bad("unknown mode %q: use %s or %s", c.Mode, ModeColocated, ModeDisaggregated)
	}
	return c.Calibration.Validate()
}
