package simulate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Broken traces fail with the file, line and column named.
func TestBadTraces(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"negative arrival", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,10\n-1,10,10\n", []string{":3", "arrived_at"}},
		{"unsorted arrival", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,10\n2,10,10\n1,10,10\n", []string{":4", "arrived_at"}},
		{"zero output tokens", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,10\n1,10,0\n", []string{":3", "num_decode_tokens"}},
		{"missing column", "arrived_at,num_prefill_tokens\n0,10\n", []string{"num_decode_tokens"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, "trace.csv", tc.body)
			_, _, err := openSource(runresult.WorkloadConfig{Trace: p})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	if _, _, err := openSource(runresult.WorkloadConfig{}); err == nil {
		t.Error("no trace and no workload accepted")
	}
}

// Configurations vLLM would refuse are refused with a reason.
func TestBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*runresult.Config)
		want string
	}{
		{"weights do not fit", func(c *runresult.Config) { c.Model = "llama-3.3-70b" }, "weights need"},
		{"KV cannot hold one max_model_len sequence", func(c *runresult.Config) { c.Engine.NumGPUBlocksOverride = 10 }, "max_model_len 8192 needs 512 KV blocks"},
		{"max_model_len above the model's", func(c *runresult.Config) { c.Model = "llama-2-7b"; c.Engine.MaxModelLen = 8192 }, "exceeds the 4096 positions"},
		{"no chunked prefill with a small budget", func(c *runresult.Config) { c.Engine.EnableChunkedPrefill = false; c.Engine.MaxNumBatchedTokens = 2048 }, "without chunked prefill"},
		{"budget under max_num_seqs", func(c *runresult.Config) { c.Engine.MaxNumBatchedTokens = 128 }, "max_num_batched_tokens (128) must be at least max_num_seqs (256)"},
		{"zero block size", func(c *runresult.Config) { c.Engine.BlockSize = 0 }, "block_size"},
		{"memory utilisation over 1", func(c *runresult.Config) { c.Engine.GPUMemoryUtilization = 1.5 }, "gpu_memory_utilization"},
		{"unknown router", func(c *runresult.Config) { c.Router = "random" }, "unknown router"},
		{"unknown device", func(c *runresult.Config) { c.Device = "tpu" }, "unknown device"},
		{"TP not dividing heads", func(c *runresult.Config) { c.Layout.TP = 3 }, "TP=3"},
		{"MoE with DP and PP", func(c *runresult.Config) {
			c.Model = "qwen3-30b-a3b"
			c.Layout = spec.Layout{TP: 1, EP: 2, DP: 2, PP: 2}
		}, "pipeline"},
		{"MoE EP within DP", func(c *runresult.Config) { c.Model = "qwen3-30b-a3b"; c.Layout = spec.Layout{TP: 2, EP: 2, DP: 2} }, "EP = TP x DP"},
		{"DeepEP without EP", func(c *runresult.Config) {
			c.Model, c.Layout, c.MoE.All2AllBackend = "qwen3-30b-a3b", spec.Layout{TP: 1, DP: 2}, spec.All2AllDeepEPLL
		}, "use_all2all_kernels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			_, err := New(cfg, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A YAML config with an unknown engine option is an error naming it.
func TestUnknownConfigOption(t *testing.T) {
	p := writeFile(t, "sim.yaml", "model: llama-3.1-8b\nengine:\n  max_num_seq: 64\n")
	_, err := runresult.LoadConfig(p)
	if err == nil || !strings.Contains(err.Error(), "max_num_seq") || !strings.Contains(err.Error(), p) {
		t.Errorf("error %v, want the file and the unknown field named", err)
	}
	p = writeFile(t, "cal.yaml", "host_ms_per_step: 1\nlaunch_ms: 3\n")
	if _, err := runresult.LoadCalibration(p); err == nil || !strings.Contains(err.Error(), "launch_ms") {
		t.Errorf("calibration error %v, want the unknown field named", err)
	}
	p = writeFile(t, "sim.yaml", "model: llama-3.1-8b\nengine:\n  max_num_seqs: 64\n")
	cfg, err := runresult.LoadConfig(p)
	if err != nil || cfg.Engine.MaxNumSeqs != 64 || cfg.Engine.MaxNumBatchedTokens != 8192 || !cfg.Engine.EnableChunkedPrefill {
		t.Errorf("config %+v, %v: want max_num_seqs 64 over the defaults", cfg.Engine, err)
	}
}

// Requests from a Source are checked as they arrive.
func TestBadRequestsFromSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows [][3]float64
		want string
	}{
		{"unsorted", [][3]float64{{1, 10, 10}, {0.5, 10, 10}}, "before the previous arrival"},
		{"negative", [][3]float64{{-1, 10, 10}}, "not a non-negative time"},
		{"no output", [][3]float64{{0, 10, 0}}, "0 output tokens"},
		{"no prompt", [][3]float64{{0, 0, 10}}, "0 prompt tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, err := New(testConfig(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = sim.Run(NewSliceSource(reqs(tc.rows...)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// failingSource ends early with an error.
type failingSource struct{ SliceSource }

func (failingSource) Err() error { return errors.New("trace stream broke at line 3") }

// A Source that fails part way fails the run with its error.
func TestSourceErrorFailsRun(t *testing.T) {
	sim, err := New(testConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := failingSource{*NewSliceSource(reqs([3]float64{0, 10, 10}))}
	if _, err := sim.Run(&src); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %v, want the source's", err)
	}
}
