package spec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// EngineLimits are the serving-engine settings that bound what a simulation
// asks of the operator predictors, named as vLLM names them. One set serves
// every stage: collect plans its sweep to them (and records them beside its
// CSV files), fit --check-coverage checks a bundle against them, simulate
// serves with them. Validate and Resolve are the only rules they have.
type EngineLimits struct {
	// MaxNumBatchedTokens is the token budget of one engine step.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens" yaml:"max_num_batched_tokens"`
	// MaxNumSeqs is the most sequences running at once.
	MaxNumSeqs int `json:"max_num_seqs" yaml:"max_num_seqs"`
	// MaxModelLen is the longest request (prompt + output); 0 means
	// Resolve's default, min(the model's max_position_embeddings,
	// DefaultMaxModelLen).
	MaxModelLen int `json:"max_model_len" yaml:"max_model_len"`
	// BlockSize is the tokens per KV-cache block (the page size of paged
	// attention, which collect's attention shapes use too).
	BlockSize int `json:"block_size" yaml:"block_size"`
}

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
	// workload; the attention grids of a collect sweep grow with it.
	DefaultMaxModelLen = 8192
	// DefaultBlockSize is vLLM's default KV-cache block size on CUDA
	// (vllm/config/cache.py, block_size 16).
	DefaultBlockSize = 16
)

// DefaultEngineLimits returns the default limits, MaxModelLen left 0
// (Resolve derives it from the model).
func DefaultEngineLimits() EngineLimits {
	return EngineLimits{MaxNumBatchedTokens: DefaultMaxNumBatchedTokens, MaxNumSeqs: DefaultMaxNumSeqs, BlockSize: DefaultBlockSize}
}

// Validate checks the limits without a model: at least one token and one
// sequence per step, a token budget of at least max_num_seqs (as vLLM's
// SchedulerConfig requires), max_model_len 0 (derived) or at least 2 (one
// prompt token and one output token), a block size of at least 1.
func (l EngineLimits) Validate() error {
	switch {
	case l.MaxNumBatchedTokens < 1:
		return fmt.Errorf("engine limits: max_num_batched_tokens must be at least 1, got %d", l.MaxNumBatchedTokens)
	case l.MaxNumSeqs < 1:
		return fmt.Errorf("engine limits: max_num_seqs must be at least 1, got %d", l.MaxNumSeqs)
	case l.MaxNumBatchedTokens < l.MaxNumSeqs:
		return fmt.Errorf("engine limits: max_num_batched_tokens (%d) must be at least max_num_seqs (%d), as vLLM requires: raise --max-num-batched-tokens or lower --max-num-seqs", l.MaxNumBatchedTokens, l.MaxNumSeqs)
	case l.MaxModelLen < 0 || l.MaxModelLen == 1:
		return fmt.Errorf("engine limits: max_model_len must be 0 (the model's maximum, at most %d) or at least 2, got %d", DefaultMaxModelLen, l.MaxModelLen)
	case l.BlockSize < 1:
		return fmt.Errorf("engine limits: block_size must be at least 1, got %d", l.BlockSize)
	}
	return nil
}

// Resolve validates l for model m and fills its default: a MaxModelLen of
// 0 becomes min(m's max_position_embeddings, DefaultMaxModelLen); one
// beyond m's positions is refused, as vLLM refuses it (collect would
// profile, and fit --check-coverage check, lengths the model cannot
// serve).
func (l EngineLimits) Resolve(m *Model) (EngineLimits, error) {
	if err := l.Validate(); err != nil {
		return l, err
	}
	if m.MaxPosition > 0 && l.MaxModelLen > m.MaxPosition {
		return l, fmt.Errorf("engine limits: max_model_len %d exceeds the %d positions of %s (max_position_embeddings): give --max-model-len %d or less, or 0 for min(the model's maximum, %d)",
			l.MaxModelLen, m.MaxPosition, m.Name, m.MaxPosition, DefaultMaxModelLen)
	}
	if l.MaxModelLen == 0 {
		modelMax := m.MaxPosition
		if modelMax <= 0 {
			modelMax = math.MaxInt32
		}
		l.MaxModelLen = min(modelMax, DefaultMaxModelLen)
	}
	return l, nil
}

// Beyond compares the limits of a simulation (l, resolved) with those its
// profiles were measured at: at, the limits a collect sweep recorded (nil
// when not recorded), and blockSizes, the KV-cache block sizes of the
// attention rows. It returns one sentence per difference, naming both
// values: a limit above the profiled one (those steps extrapolate) or a
// block size the attention rows were not measured at.
func (l EngineLimits) Beyond(at *EngineLimits, blockSizes []int) []string {
	var out []string
	if at != nil {
		for _, c := range []struct {
			name      string
			sim, prof int
		}{
			{"max_num_batched_tokens", l.MaxNumBatchedTokens, at.MaxNumBatchedTokens},
			{"max_num_seqs", l.MaxNumSeqs, at.MaxNumSeqs},
			{"max_model_len", l.MaxModelLen, at.MaxModelLen},
		} {
			if c.prof > 0 && c.sim > c.prof {
				out = append(out, fmt.Sprintf("%s %d is above the %d the profiles were collected at: larger steps extrapolate (collect again with --%s %d)",
					c.name, c.sim, c.prof, strings.ReplaceAll(c.name, "_", "-"), c.sim))
			}
		}
	}
	if len(blockSizes) > 0 && l.BlockSize > 0 && !slices.Contains(blockSizes, l.BlockSize) {
		out = append(out, fmt.Sprintf("block_size %d differs from the block size %s of the profiled attention rows: attention times are those of the profiled page size (simulate with --block-size %d, or collect attention with --block-size %d)",
			l.BlockSize, intList(blockSizes), blockSizes[0], l.BlockSize))
	}
	return out
}

// intList writes vs as "16" or "16, 32".
func intList(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
