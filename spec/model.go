package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Model is a decoder-only transformer architecture, the subset of a Hugging
// Face config.json that decides cost and memory.
type Model struct {
	Name string `json:"name"`
	// HubID is the Hugging Face repository of a catalog model
	// (meta-llama/Llama-3.1-8B-Instruct), which resolves to it as its
	// catalog name does; "" for a model read from a config.json.
	HubID        string `json:"hub_id,omitempty"`
	Architecture string `json:"architecture"` // e.g. Qwen3MoeForCausalLM
	ModelType    string `json:"model_type"`

	HiddenSize       int  `json:"hidden_size"`
	IntermediateSize int  `json:"intermediate_size"` // dense MLP width
	NumLayers        int  `json:"num_hidden_layers"`
	NumHeads         int  `json:"num_attention_heads"`
	NumKVHeads       int  `json:"num_key_value_heads"`
	HeadDim          int  `json:"head_dim"`
	VocabSize        int  `json:"vocab_size"`
	MaxPosition      int  `json:"max_position_embeddings"`
	TiedEmbeddings   bool `json:"tie_word_embeddings"`
	AttentionBias    bool `json:"attention_bias"`
	QKNorm           bool `json:"qk_norm"`
	GatedMLP         bool `json:"gated_mlp"`

	// Mixture of experts; NumExperts == 0 means a dense model.
	NumExperts          int `json:"num_experts"`
	TopK                int `json:"num_experts_per_tok"`
	MoEIntermediateSize int `json:"moe_intermediate_size"`
	SharedExperts       int `json:"n_shared_experts"`
	// SharedExpertIntermediateSize is the width of the shared expert block
	// (Qwen2-MoE style); when zero, shared experts use MoEIntermediateSize.
	SharedExpertIntermediateSize int `json:"shared_expert_intermediate_size"`
	FirstDenseLayers             int `json:"first_k_dense_replace"`

	// Multi-head latent attention (DeepSeek); KVLoraRank > 0 turns it on.
	QLoraRank     int `json:"q_lora_rank"`
	KVLoraRank    int `json:"kv_lora_rank"`
	QKNopeHeadDim int `json:"qk_nope_head_dim"`
	QKRopeHeadDim int `json:"qk_rope_head_dim"`
	VHeadDim      int `json:"v_head_dim"`

	// Local attention: AttentionWindow > 0 bounds the context a local
	// layer attends to (Gemma's sliding window, Llama-4's chunk);
	// GlobalAttentionEvery = n makes every n-th layer (1-based) global
	// instead; 0 makes every layer local.
	AttentionWindow      int `json:"attention_window,omitempty"`
	GlobalAttentionEvery int `json:"global_attention_every,omitempty"`
	// MoELayerStep = n makes every n-th layer (1-based) an MoE layer and
	// the others dense (Llama-4 Maverick interleaves them); 0 or 1: all.
	MoELayerStep int `json:"moe_layer_step,omitempty"`

	// WeightBytes is bytes per weight element of the layers' linear
	// weights (2 for BF16, 1 for FP8 / INT8); embeddings and the LM head
	// stay BF16, as quantized checkpoints keep them.
	WeightBytes int `json:"weight_bytes"`
	// FP8Compute says the GEMMs run on FP8 (or INT8) tensor cores (W8A8).
	FP8Compute bool `json:"fp8_compute,omitempty"`
	// FP8CutlassMoE says vLLM runs the FP8 MoE layers with its CUTLASS
	// grouped GEMM rather than the fused-MoE Triton kernel (roofline/fp8moe.go).
	FP8CutlassMoE bool `json:"fp8_cutlass_moe,omitempty"`
	// FP8Block says the FP8 weights are quantized in blocks
	// (quantization_config.weight_block_size) and the activations per token
	// group, as DeepSeek-style checkpoints are (roofline/moetriton.go).
	FP8Block bool `json:"fp8_block,omitempty"`
	// FP8StaticScales says per-tensor FP8 activations take static scales
	// from the checkpoint (fp8 with activation_scheme static, ModelOpt
	// FP8), not ones computed per batch; vLLM 0.24 runs such MoE layers
	// on FlashInfer's CUTLASS MoE on Hopper (roofline/kernelchoice.go).
	FP8StaticScales bool `json:"fp8_static_scales,omitempty"`
	// Quantization names the scheme read from the config ("" for BF16).
	Quantization string `json:"quantization,omitempty"`
	// Note states an approximation made reading the config (a wrapper
	// priced as its language model).
	Note string `json:"note,omitempty"`
	// KVBytes is bytes per KV-cache element (2 for BF16).
	KVBytes int `json:"kv_bytes"`
}

// IsMoE reports whether the model has routed experts.
func (m *Model) IsMoE() bool { return m.NumExperts > 0 }

// IsMLA reports whether the model uses multi-head latent attention.
func (m *Model) IsMLA() bool { return m.KVLoraRank > 0 }

// IsMoELayer reports whether layer i (0-based) is an MoE layer.
func (m *Model) IsMoELayer(i int) bool {
	return m.IsMoE() && i >= m.FirstDenseLayers && (m.MoELayerStep <= 1 || (i+1)%m.MoELayerStep == 0)
}

// IsLocalAttentionLayer reports whether layer i (0-based) attends only
// within AttentionWindow tokens.
func (m *Model) IsLocalAttentionLayer(i int) bool {
	return m.AttentionWindow > 0 && (m.GlobalAttentionEvery <= 0 || (i+1)%m.GlobalAttentionEvery != 0)
}

// AttentionContext is the context layer i attends to when a sequence has
// ctx tokens cached: all of them, or at most the window of a local layer.
func (m *Model) AttentionContext(i, ctx int) int {
	if m.IsLocalAttentionLayer(i) {
		return min(ctx, m.AttentionWindow)
	}
	return ctx
}

// Bounds of a model's dimensions, far above any published model (vocabularies
// reach 262,144, hidden sizes 16,384, layers 128, experts 512) and low enough
// that weight and KV-cache byte counts stay exact in an int64: a vocab_size of
// 1e15 once printed 0.00 GiB of weights.
const (
	maxVocab   = 1 << 24
	maxWidth   = 1 << 20
	maxLayers  = 1 << 12
	maxHeads   = 1 << 12
	maxExperts = 1 << 16
	// maxParams bounds a rough count of a model's parameters (a
	// thousand times the largest published): byte counts stay exact.
	maxParams = 1e15
)

// Validate checks that the architecture is self-consistent and its sizes
// are numbers a model has.
func (m *Model) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("model %s: %s", m.Name, fmt.Sprintf(format, a...))
	}
	for _, d := range []struct {
		name   string
		v, max int
	}{{"hidden_size", m.HiddenSize, maxWidth}, {"num_hidden_layers", m.NumLayers, maxLayers}, {"num_attention_heads", m.NumHeads, maxHeads},
		{"num_key_value_heads", m.NumKVHeads, maxHeads}, {"vocab_size", m.VocabSize, maxVocab}, {"intermediate_size", m.IntermediateSize, maxWidth},
		{"moe_intermediate_size", m.MoEIntermediateSize, maxWidth}, {"num_experts", m.NumExperts, maxExperts}, {"num_experts_per_tok", m.TopK, maxExperts}} {
		if d.v > d.max {
			return bad("%s %d is beyond any model (at most %d here): its sizes would overflow; check the config", d.name, d.v, d.max)
		}
	}
	h := float64(m.HiddenSize)
	if p := float64(m.NumLayers)*(4*h*h+3*h*max(float64(m.IntermediateSize), float64(m.NumExperts)*float64(m.MoEIntermediateSize))) + 2*float64(m.VocabSize)*h; p > maxParams {
		return bad("its sizes make about %.3g parameters, beyond any model (at most %g here): check the config", p, maxParams)
	}
	switch {
	case m.HiddenSize <= 0:
		return bad("hidden_size must be positive, got %d", m.HiddenSize)
	case m.NumLayers <= 0:
		return bad("num_hidden_layers must be positive, got %d", m.NumLayers)
	case m.NumHeads <= 0:
		return bad("num_attention_heads must be positive, got %d", m.NumHeads)
	case m.NumKVHeads <= 0 || m.NumHeads%m.NumKVHeads != 0:
		return bad("num_key_value_heads %d must divide num_attention_heads %d", m.NumKVHeads, m.NumHeads)
	case m.VocabSize <= 0:
		return bad("vocab_size must be positive, got %d", m.VocabSize)
	case m.IsMoE() && (m.TopK <= 0 || m.TopK > m.NumExperts):
		return bad("num_experts_per_tok %d must be in 1..%d", m.TopK, m.NumExperts)
	case m.IsMoE() && m.MoEIntermediateSize <= 0:
		return bad("moe_intermediate_size must be positive")
	case !m.IsMoE() && m.IntermediateSize <= 0:
		return bad("intermediate_size must be positive")
	}
	return nil
}

// ErrUnknownModel is returned by LookupModel for a name that is neither in
// the catalog nor a readable file.
var ErrUnknownModel = errors.New("unknown model")

// LookupModel resolves a catalog name (case-insensitive) or a path to a
// config.json file.
func LookupModel(nameOrPath string) (*Model, error) {
	if m, ok := catalogModel(nameOrPath); ok {
		return m, nil
	}
	_, statErr := os.Stat(nameOrPath)
	if strings.HasSuffix(nameOrPath, ".json") || statErr == nil {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", nameOrPath, err)
		}
		name := strings.TrimSuffix(filepath.Base(nameOrPath), ".json")
		if name == "config" {
			name = filepath.Base(filepath.Dir(nameOrPath))
		}
		return ParseConfig(name, data)
	}
	return nil, fmt.Errorf("%w %q: not in the catalog (%s, or their Hugging Face ids: see 'ftk models list') and not a config.json path", ErrUnknownModel, nameOrPath, strings.Join(ModelNames(), ", "))
}
