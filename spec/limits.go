package spec

import (
	"fmt"
	"math"
)

// The default engine limits, one set for every stage: collect plans its
// sweep to them, fit --check-coverage checks a bundle against them,
// simulate serves with them and the Makefile passes them to all three, so
// what is profiled is what is checked is what is simulated.
const (
	// DefaultMaxNumBatchedTokens is the token budget per step with chunked
	// prefill, a vLLM V1 engine argument (vllm/engine/arg_utils.py; its
	// default varies by vLLM version and GPU class): a setting, not a
	// measurement.
	DefaultMaxNumBatchedTokens = 8192
	// DefaultMaxNumSeqs is vLLM's default max_num_seqs (256).
	DefaultMaxNumSeqs = 256
	// DefaultMaxModelLen caps max_model_len, which vLLM sets to the
	// model's max_position_embeddings. 8192, not 4096: the conversation
	// trace of Splitwise (testdata/traces/splitwise_conv.csv) has 1,612
	// of 19,366 requests longer than 4096 tokens (prompt + output) and 1
	// longer than 8192, so a 4096 limit rejects ~8% of a conversation
	// workload. the sweep
	// (attention grids grow with the length) within a minute of synthetic
	// collect.
	DefaultMaxModelLen = 8192
)

// ResolveMaxModelLen is the max_model_len a run of model m uses when asked
// for asked tokens (0: the default, min(m's positions, DefaultMaxModelLen)).
func ResolveMaxModelLen(m *Model, asked int) int {
	if asked != 0 {
		return asked
	}
	modelMax := m.MaxPosition
	if modelMax <= 0 {
		modelMax = math.MaxInt32
	}
	return min(modelMax, DefaultMaxModelLen)
}

// CheckMaxModelLen refuses a max_model_len beyond the model's positions
// (max_position_embeddings), as vLLM does: collect would profile, and fit
// --check-coverage check, lengths the model cannot serve. 0 (the default)
// always passes.
func CheckMaxModelLen(m *Model, asked int) error {
	if m.MaxPosition > 0 && asked > m.MaxPosition {
		return fmt.Errorf("max_model_len %d exceeds the %d positions of %s (max_position_embeddings): give --max-model-len %d or less, or 0 for min(the model's maximum, %d)",
			asked, m.MaxPosition, m.Name, m.MaxPosition, DefaultMaxModelLen)
	}
	return nil
}
