package spec

import (
	"strings"
	"testing"
)

// TestEngineLimitsValidate: one rule set for every stage (collect, fit
// --check-coverage, simulate).
func TestEngineLimitsValidate(t *testing.T) {
	ok := DefaultEngineLimits()
	for _, tc := range []struct {
		name string
		edit func(*EngineLimits)
		want string // "" for valid
	}{
		{"defaults", func(*EngineLimits) {}, ""},
		{"model length derived", func(l *EngineLimits) { l.MaxModelLen = 0 }, ""},
		{"shortest model length", func(l *EngineLimits) { l.MaxModelLen = 2 }, ""},
		{"no block size", func(l *EngineLimits) { l.BlockSize = 0 }, "block_size must be at least 1"},
		{"no tokens", func(l *EngineLimits) { l.MaxNumBatchedTokens = 0 }, "max_num_batched_tokens must be at least 1"},
		{"no sequences", func(l *EngineLimits) { l.MaxNumSeqs = 0 }, "max_num_seqs must be at least 1"},
		{"budget below sequences", func(l *EngineLimits) { l.MaxNumBatchedTokens, l.MaxNumSeqs = 64, 256 }, "max_num_batched_tokens (64) must be at least max_num_seqs (256)"},
		{"model length 1", func(l *EngineLimits) { l.MaxModelLen = 1 }, "max_model_len must be 0"},
		{"negative model length", func(l *EngineLimits) { l.MaxModelLen = -1 }, "max_model_len must be 0"},
		{"negative block size", func(l *EngineLimits) { l.BlockSize = -16 }, "block_size must be at least 1"},
	} {
		l := ok
		tc.edit(&l)
		err := l.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestEngineLimitsResolve(t *testing.T) {
	m, err := LookupModel("llama-2-7b") // 4096 positions
	if err != nil {
		t.Fatal(err)
	}
	got, err := EngineLimits{MaxNumBatchedTokens: 512, MaxNumSeqs: 8, BlockSize: DefaultBlockSize}.Resolve(m)
	if err != nil || got != (EngineLimits{MaxNumBatchedTokens: 512, MaxNumSeqs: 8, MaxModelLen: 4096, BlockSize: DefaultBlockSize}) {
		t.Errorf("resolved %+v, %v; want max_model_len 4096 (the model's) and block size %d", got, err, DefaultBlockSize)
	}
	if _, err := (EngineLimits{MaxNumBatchedTokens: 512, MaxNumSeqs: 8, MaxModelLen: 8192, BlockSize: DefaultBlockSize}).Resolve(m); err == nil || !strings.Contains(err.Error(), "exceeds the 4096 positions") {
		t.Errorf("max_model_len beyond the model: %v", err)
	}
	if _, err := (EngineLimits{MaxNumBatchedTokens: 64, MaxNumSeqs: 256}).Resolve(m); err == nil {
		t.Error("Resolve took limits Validate refuses")
	}
}

// TestEngineLimitsBeyond: a simulation's limits above those its profiles
// were collected at, or a block size its attention rows were not measured
// at, are named with both values; limits within them say nothing.
func TestEngineLimitsBeyond(t *testing.T) {
	at := &EngineLimits{MaxNumBatchedTokens: 256, MaxNumSeqs: 8, MaxModelLen: 512, BlockSize: 16}
	if n := (EngineLimits{MaxNumBatchedTokens: 256, MaxNumSeqs: 4, MaxModelLen: 512, BlockSize: 16}).Beyond(at, []int{16}); len(n) != 0 {
		t.Errorf("within the profiled limits: %q", n)
	}
	n := (EngineLimits{MaxNumBatchedTokens: 8192, MaxNumSeqs: 8, MaxModelLen: 4096, BlockSize: 32}).Beyond(at, []int{16})
	want := []string{"max_num_batched_tokens 8192 is above the 256", "max_model_len 4096 is above the 512", "block_size 32 differs from the block size 16"}
	if len(n) != len(want) {
		t.Fatalf("notes %q, want %d", n, len(want))
	}
	for i, w := range want {
		if !strings.Contains(n[i], w) {
			t.Errorf("note %d %q, want %q", i, n[i], w)
		}
	}
	// Third-party profiles record no limits: only the block size compares.
	if n := (EngineLimits{MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, MaxModelLen: 8192, BlockSize: 16}).Beyond(nil, []int{16}); len(n) != 0 {
		t.Errorf("no recorded limits, same block size: %q", n)
	}
}
