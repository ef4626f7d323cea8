package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Speculative decoding methods, as vLLM's SpeculativeConfig.method names
// them (vllm/config/speculative.py). vLLM folds the MTP variants of each
// model family (deepseek_mtp, qwen3_next_mtp, mimo_mtp, ernie_mtp, ...)
// into "mtp"; ParseSpeculativeConfig does the same.
const (
	SpecEagle      = "eagle"
	SpecEagle3     = "eagle3"
	SpecMTP        = "mtp"
	SpecDraftModel = "draft_model"
	SpecNgram      = "ngram"
)

// SpecMethods lists the methods ftk simulates.
var SpecMethods = []string{SpecEagle, SpecEagle3, SpecMTP, SpecDraftModel, SpecNgram}

// Speculative is a run's speculative decoding, vLLM's --speculative-config
// with the keys vLLM uses, plus the acceptance ftk draws from. The zero
// value (or NumSpeculativeTokens 0) is no speculative decoding.
type Speculative struct {
	// Method is one of SpecMethods.
	Method string `json:"method" yaml:"method"`
	// NumSpeculativeTokens is K, the draft tokens proposed per request
	// and step.
	NumSpeculativeTokens int `json:"num_speculative_tokens" yaml:"num_speculative_tokens"`
	// Model is the drafter: for draft_model a model ftk prices (a catalog
	// name, Hugging Face id of a catalog model or a config.json path); for
	// eagle and eagle3 the head's Hugging Face id (informational: the head
	// is priced from the target's layer shapes); unused for mtp and ngram.
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
	// PromptLookupMax and PromptLookupMin are the n-gram proposer's window
	// (vLLM's prompt_lookup_max / prompt_lookup_min; recorded, not priced).
	PromptLookupMax int `json:"prompt_lookup_max,omitempty" yaml:"prompt_lookup_max,omitempty"`
	PromptLookupMin int `json:"prompt_lookup_min,omitempty" yaml:"prompt_lookup_min,omitempty"`
	// DraftVocabSize is an EAGLE-3 head's reduced vocabulary (its LM head's
	// width; 0: the target's vocabulary).
	DraftVocabSize int `json:"draft_vocab_size,omitempty" yaml:"draft_vocab_size,omitempty"`
	// Acceptance is the per-position acceptance rate: entry i is the
	// fraction of drafts whose draft token i+1 is accepted, as vLLM's
	// SpecDecodingLogging reports it (vllm/v1/spec_decode/metrics.py:
	// num_accepted_tokens_per_pos / num_drafts). A token is accepted only
	// when every token before it is, so the entries never increase. Empty
	// means the acceptance record of AcceptanceRecordName, or the default
	// record of the method (LookupAcceptance).
	Acceptance []float64 `json:"acceptance,omitempty" yaml:"acceptance,omitempty"`
	// Dataset picks the acceptance record by dataset ("": any).
	Dataset string `json:"dataset,omitempty" yaml:"dataset,omitempty"`
	// AcceptanceRecord names the record Acceptance was taken from ("":
	// given directly).
	AcceptanceRecord string `json:"acceptance_record,omitempty" yaml:"acceptance_record,omitempty"`
}

// Enabled reports whether s runs speculative decoding.
func (s *Speculative) Enabled() bool { return s != nil && s.NumSpeculativeTokens > 0 }

// UsesDraftPasses reports whether the drafter runs forward passes on the
// GPU (every method but n-gram).
func (s *Speculative) UsesDraftPasses() bool { return s.Method != SpecNgram }

// LookaheadTokens is the KV slots vLLM's scheduler allocates beyond the
// scheduled tokens for the drafter (num_lookahead_tokens): K for EAGLE and
// MTP heads and draft models, which write the draft tokens' KV, 0 for
// n-gram (vllm/v1/core/sched/scheduler.py, Scheduler.__init__: use_eagle()
// or uses_draft_model()).
func (s *Speculative) LookaheadTokens() int {
	if !s.Enabled() || s.Method == SpecNgram {
		return 0
	}
	return s.NumSpeculativeTokens
}

// mtpAliases are vLLM's model-specific MTP method names, all "mtp" once
// resolved (vllm/config/speculative.py, MTP_MODEL_TYPES).
var mtpAliases = []string{"deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "ernie_mtp", "qwen3_next_mtp", "longcat_flash_mtp", "pangu_ultra_moe_mtp"}

// NormalizeSpecMethod returns the method name vLLM resolves name to
// ("[ngram]" and the MTP variants), or an error naming the methods.
func NormalizeSpecMethod(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "[ngram]":
		n = SpecNgram
	case slices.Contains(mtpAliases, n):
		n = SpecMTP
	}
	if !slices.Contains(SpecMethods, n) {
		return "", fmt.Errorf("speculative method %q: use %s (vLLM's names; %s are mtp)", name, strings.Join(SpecMethods, ", "), strings.Join(mtpAliases, ", "))
	}
	return n, nil
}

// ParseSpeculativeConfig reads vLLM's --speculative-config JSON (method,
// num_speculative_tokens, model, prompt_lookup_max, prompt_lookup_min,
// draft_vocab_size) and ftk's acceptance, dataset keys. Keys vLLM has that
// change nothing ftk prices (draft_tensor_parallel_size equal to the
// target's, disable_logprobs, ...) are accepted and ignored; an unknown
// key is an error.
func ParseSpeculativeConfig(data string) (Speculative, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return Speculative{}, fmt.Errorf("--speculative-config: %w (want a JSON object as vLLM takes it, e.g. '{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", \"num_speculative_tokens\": 3}')", err)
	}
	var s Speculative
	ignored := []string{"draft_tensor_parallel_size", "disable_logprobs", "disable_log_stats", "quantization", "revision", "code_revision",
		"max_model_len", "disable_padded_drafter_batch", "speculative_token_tree", "enforce_eager", "parallel_drafting"}
	fields := map[string]any{"method": &s.Method, "num_speculative_tokens": &s.NumSpeculativeTokens, "model": &s.Model,
		"prompt_lookup_max": &s.PromptLookupMax, "prompt_lookup_min": &s.PromptLookupMin, "draft_vocab_size": &s.DraftVocabSize,
		"acceptance": &s.Acceptance, "dataset": &s.Dataset}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if slices.Contains(ignored, k) {
			continue
		}
		dst, ok := fields[k]
		if !ok {
			return s, fmt.Errorf("--speculative-config: unknown key %q (ftk reads method, num_speculative_tokens, model, prompt_lookup_max, prompt_lookup_min, draft_vocab_size, acceptance, dataset; and ignores %s)", k, strings.Join(ignored, ", "))
		}
		if err := json.Unmarshal(raw[k], dst); err != nil {
			return s, fmt.Errorf("--speculative-config: key %s: %w", k, err)
		}
	}
	if s.Method == "" && s.Model != "" {
		// vLLM infers the method from the draft model's config; ftk
		// cannot read it, and asks.
		return s, fmt.Errorf("--speculative-config: no method for model %q: add \"method\" (%s)", s.Model, strings.Join(SpecMethods, ", "))
	}
	if s.Method == "" && len(raw) > 0 {
		return s, fmt.Errorf("--speculative-config: no method: add \"method\" (%s)", strings.Join(SpecMethods, ", "))
	}
	return s, nil
}

// Validate checks a speculative configuration and normalizes its method;
// a disabled one (K = 0) is valid whatever its method.
func (s *Speculative) Validate() error {
	if s == nil || (s.Method == "" && s.NumSpeculativeTokens == 0) {
		return nil
	}
	m, err := NormalizeSpecMethod(s.Method)
	if err != nil {
		return err
	}
	s.Method = m
	switch {
	case s.NumSpeculativeTokens == 0:
		return nil
	case s.NumSpeculativeTokens < 0:
		return fmt.Errorf("speculative decoding %s: num_speculative_tokens must not be negative (0: off), got %d", m, s.NumSpeculativeTokens)
	case s.NumSpeculativeTokens > 32:
		return fmt.Errorf("speculative decoding %s: num_speculative_tokens %d: at most 32 here", m, s.NumSpeculativeTokens)
	case m == SpecDraftModel && s.Model == "":
		return fmt.Errorf("speculative decoding draft_model: name the draft model (\"model\" in --speculative-config, --speculative-model)")
	case s.PromptLookupMax < 0 || s.PromptLookupMin < 0 || (s.PromptLookupMax > 0 && s.PromptLookupMin > s.PromptLookupMax):
		return fmt.Errorf("speculative decoding ngram: prompt_lookup_min %d and prompt_lookup_max %d: want 0 <= min <= max", s.PromptLookupMin, s.PromptLookupMax)
	case s.DraftVocabSize < 0:
		return fmt.Errorf("speculative decoding: draft_vocab_size must not be negative, got %d", s.DraftVocabSize)
	}
	if len(s.Acceptance) > 0 {
		return CheckAcceptance(s.Acceptance, s.NumSpeculativeTokens)
	}
	return nil
}

// CheckAcceptance checks a per-position acceptance vector for K draft
// tokens: at least K entries, each in [0, 1], never increasing.
func CheckAcceptance(a []float64, k int) error {
	if len(a) < k {
		return fmt.Errorf("acceptance %v has %d positions, num_speculative_tokens %d needs %d (give one rate per draft position)", a, len(a), k, k)
	}
	prev := 1.0
	for i, p := range a {
		if !(p >= 0 && p <= 1) || math.IsNaN(p) {
			return fmt.Errorf("acceptance position %d is %g: want a rate in [0, 1]", i+1, p)
		}
		if p > prev+1e-12 {
			return fmt.Errorf("acceptance position %d is %g, above position %d's %g: a draft token is accepted only after every one before it, so the per-position rates never increase", i+1, p, i, prev)
		}
		prev = p
	}
	return nil
}

// ConditionalAcceptance returns, per draft position, the probability that
// the position is accepted given that every position before it was: the
// per-position rates a (unconditional, vLLM's) divided by the one before
// (a_i / a_{i-1}, a_0 = 1; 0 after a zero).
func ConditionalAcceptance(a []float64, k int) []float64 {
	c := make([]float64, k)
	prev := 1.0
	for i := range c {
		if prev > 0 {
			c[i] = min(1, a[i]/prev)
		}
		prev = a[i]
	}
	return c
}

// MeanAcceptanceLength is vLLM's mean acceptance length for per-position
// rates a over K positions: 1 (the bonus token) + the expected accepted
// drafts, sum of a_i.
func MeanAcceptanceLength(a []float64, k int) float64 {
	l := 1.0
	for _, p := range a[:min(k, len(a))] {
		l += p
	}
	return l
}
