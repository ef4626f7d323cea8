package collect

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

const sharedProfiles = "../testdata/profiles"

// sharedHeader reads the header of a real profile under testdata.
func sharedHeader(t *testing.T, rel string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedProfiles, rel))
	if err != nil {
		t.Fatalf("the real profiles are needed: %v", err)
	}
	defer f.Close()
	h, err := csv.NewReader(f).Read()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// isSubsequence reports whether want appears in got in the same order.
func isSubsequence(want, got []string) (string, bool) {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		return want[i], false
	}
	return "", true
}

// Our files carry the columns of the real Frontier and Vidur files, in
// their order, so a reader of those formats reads ours.
func TestColumnsMatchRealProfiles(t *testing.T) {
	dir := t.TempDir()
	m := mustModel(t, "qwen3-30b-a3b-tiny")
	o := syntheticOptions(t, dir, planConfig(m, smallLimits, []spec.Layout{{TP: 2, EP: 2}}))
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sweep := SweepDir(dir, "h800", m.Name, Shard{})
	for _, tc := range []struct{ ours, real string }{
		{"linear_op.csv", "frontier-h800/Qwen3-30B-A3B-tiny/linear_op.csv"},
		{"linear_op_kernel_only.csv", "frontier-h800/Qwen3-30B-A3B-tiny/linear_op_kernel_only.csv"},
		{"attention.csv", "frontier-h800/Qwen3-30B-A3B-tiny/attention.csv"},
		{"attention_kernel_only.csv", "frontier-h800/Qwen3-30B-A3B-tiny/attention_kernel_only.csv"},
		{"moe.csv", "frontier-h800/Qwen3-30B-A3B-tiny/moe.csv"},
		{"moe_kernel_only.csv", "frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv"},
		{"network/all_reduce.csv", "vidur-h100/network-h100_dgx/all_reduce.csv"},
	} {
		ours, _ := readCSV(t, filepath.Join(sweep, tc.ours))
		real := sharedHeader(t, tc.real)
		var keys []string
		for _, c := range real {
			if strings.HasPrefix(c, "time_stats.") {
				if !slices.Contains(ours, c) {
					t.Errorf("%s lacks %s of %s", tc.ours, c, tc.real)
				}
				continue
			}
			keys = append(keys, c)
		}
		if miss, ok := isSubsequence(keys, ours); !ok {
			t.Errorf("%s: column %q of %s missing or out of order", tc.ours, miss, tc.real)
		}
	}
	host, _ := readCSV(t, filepath.Join(sweep, "cpu_overhead.csv"))
	formats := []string{"model_name", "batch_size", "tensor_parallel_degree", "num_prefill_tokens", "num_decode_tokens",
		"scheduling_mode", "schedule_mean", "schedule_median", "sampler_e2e_mean", "sampler_e2e_median",
		"prepare_inputs_e2e_mean", "prepare_inputs_e2e_median", "process_model_outputs_mean",
		"process_model_outputs_median", "ray_comm_time_mean"}
	if miss, ok := isSubsequence(formats, host); !ok {
		t.Errorf("cpu_overhead.csv: docs/formats.md column %q missing or out of order", miss)
	}
	for _, f := range csvFiles(t, sweep) {
		h, rows := readCSV(t, filepath.Join(sweep, f))
		for _, c := range []string{"profiling_backend", "shape_id", "measurement_type"} {
			if !slices.Contains(h, c) {
				t.Errorf("%s lacks %s", f, c)
			}
		}
		for _, v := range column(t, h, rows, "profiling_backend") {
			if v != BackendSynthetic {
				t.Fatalf("%s: profiling_backend %q, want synthetic", f, v)
			}
		}
	}
}

// Row semantics: the feature columns hold what the shape measured.
func TestRowsHoldFeatures(t *testing.T) {
	dir := t.TempDir()
	m := mustModel(t, "qwen3-30b-a3b")
	o := syntheticOptions(t, dir, planConfig(m, smallLimits, []spec.Layout{{TP: 2, EP: 2}}, spec.FamilyAttention, spec.FamilyMoE))
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sweep := SweepDir(dir, "h800", m.Name, Shard{})
	h, rows := readCSV(t, filepath.Join(sweep, "attention.csv"))
	get := func(r []string, c string) string { return r[slices.Index(h, c)] }
	var prefill, decode, mixed int
	for _, r := range rows {
		switch {
		case get(r, "mode") == "true_mixed":
			mixed++
			if get(r, "time_stats.attn_prefill.median") == "" || get(r, "time_stats.attn_decode.median") == "" || get(r, "decode_kv_cache_sizes") == "" {
				t.Errorf("true mixed row lacks its parts: %v", r)
			}
		case get(r, "is_prefill") == "True" && get(r, "is_mixed_batch") == "False":
			prefill++
			if get(r, "time_stats.attn_decode.median") != "" || get(r, "batch_size") != "1" {
				t.Errorf("prefill row with decode time or batch != 1")
			}
			if get(r, "total_tokens") != get(r, "prefill_chunk_size") {
				t.Errorf("prefill row: total_tokens %s != chunk %s", get(r, "total_tokens"), get(r, "prefill_chunk_size"))
			}
		case get(r, "is_prefill") == "False":
			decode++
			if get(r, "time_stats.attn_prefill.median") != "" || get(r, "total_tokens") != get(r, "batch_size") {
				t.Errorf("decode row: prefill time or total_tokens != batch_size")
			}
		}
	}
	if prefill == 0 || decode == 0 || mixed == 0 {
		t.Errorf("attention rows: %d prefill, %d decode, %d true mixed", prefill, decode, mixed)
	}
	h, rows = readCSV(t, filepath.Join(sweep, "moe.csv"))
	for _, r := range rows {
		routed, max := r[slices.Index(h, "total_routed_tokens")], r[slices.Index(h, "max_expert_tokens")]
		if routed == "" || max == "" || r[slices.Index(h, "gating_runtime_context")] == "" {
			t.Fatalf("moe row lacks load columns: %v", r)
		}
	}
	if n := len(rows); n == 0 {
		t.Fatal("no MoE rows")
	}
}
