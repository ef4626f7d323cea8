package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Model is a decoder-only transformer architecture, the subset of a Hugging
// Face config.json that decides cost and memory.
type Model struct {
	Name         string `json:"name"`
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

	// WeightBytes is bytes per weight element (2 for BF16, 1 for FP8).
	WeightBytes int `json:"weight_bytes"`
	// KVBytes is bytes per KV-cache element (2 for BF16).
	KVBytes int `json:"kv_bytes"`
}

// IsMoE reports whether the model has routed experts.
func (m *Model) IsMoE() bool { return m.NumExperts > 0 }

// IsMLA reports whether the model uses multi-head latent attention.
func (m *Model) IsMLA() bool { return m.KVLoraRank > 0 }

// IsMoELayer reports whether layer i (0-based) is an MoE layer.
func (m *Model) IsMoELayer(i int) bool { return m.IsMoE() && i >= m.FirstDenseLayers }

// hfConfig mirrors the config.json keys that ftk reads. Pointers tell a
// missing key from a zero.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	HiddenSize            *int            `json:"hidden_size"`
	IntermediateSize      *int            `json:"intermediate_size"`
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	VocabSize             *int            `json:"vocab_size"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	TieWordEmbeddings     bool            `json:"tie_word_embeddings"`
	AttentionBias         bool            `json:"attention_bias"`
	UseQKNorm             *bool           `json:"use_qk_norm"`
	NumExperts            int             `json:"num_experts"`
	NumLocalExperts       int             `json:"num_local_experts"`
	NRoutedExperts        int             `json:"n_routed_experts"`
	NumExpertsPerTok      int             `json:"num_experts_per_tok"`
	MoEIntermediateSize   int             `json:"moe_intermediate_size"`
	NSharedExperts        int             `json:"n_shared_experts"`
	SharedExpertInterm    int             `json:"shared_expert_intermediate_size"`
	FirstKDenseReplace    int             `json:"first_k_dense_replace"`
	QLoraRank             int             `json:"q_lora_rank"`
	KVLoraRank            int             `json:"kv_lora_rank"`
	QKNopeHeadDim         int             `json:"qk_nope_head_dim"`
	QKRopeHeadDim         int             `json:"qk_rope_head_dim"`
	VHeadDim              int             `json:"v_head_dim"`
	TorchDtype            string          `json:"torch_dtype"`
	Dtype                 string          `json:"dtype"`
	QuantizationConfig    json.RawMessage `json:"quantization_config"`
}

// ParseConfig reads a Hugging Face style config.json. name labels the model
// in errors and outputs.
func ParseConfig(name string, data []byte) (*Model, error) {
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("model config %s: %w", name, err)
	}
	var missing []string
	need := func(key string, v *int) int {
		if v == nil {
			missing = append(missing, key)
			return 0
		}
		return *v
	}
	m := &Model{Name: name, ModelType: c.ModelType}
	if len(c.Architectures) > 0 {
		m.Architecture = c.Architectures[0]
	}
	m.HiddenSize = need("hidden_size", c.HiddenSize)
	m.NumLayers = need("num_hidden_layers", c.NumHiddenLayers)
	m.NumHeads = need("num_attention_heads", c.NumAttentionHeads)
	m.VocabSize = need("vocab_size", c.VocabSize)
	m.NumExperts = firstNonZero(c.NumExperts, c.NumLocalExperts, c.NRoutedExperts)
	if c.IntermediateSize != nil {
		m.IntermediateSize = *c.IntermediateSize
	} else if m.NumExperts == 0 {
		missing = append(missing, "intermediate_size")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("model config %s: missing required field %s", name, strings.Join(missing, ", "))
	}
	m.NumKVHeads = m.NumHeads
	if c.NumKeyValueHeads != nil {
		m.NumKVHeads = *c.NumKeyValueHeads
	}
	if c.HeadDim != nil && *c.HeadDim > 0 {
		m.HeadDim = *c.HeadDim
	} else if m.NumHeads > 0 {
		m.HeadDim = m.HiddenSize / m.NumHeads
	}
	m.MaxPosition = c.MaxPositionEmbeddings
	m.TiedEmbeddings = c.TieWordEmbeddings
	m.AttentionBias = c.AttentionBias
	m.QKNorm = c.ModelType == "qwen3" || c.ModelType == "qwen3_moe"
	if c.UseQKNorm != nil {
		m.QKNorm = *c.UseQKNorm
	}
	m.GatedMLP = true // every architecture in the catalog uses SwiGLU
	if m.NumExperts > 0 {
		m.TopK = c.NumExpertsPerTok
		m.MoEIntermediateSize = firstNonZero(c.MoEIntermediateSize, m.IntermediateSize)
		m.SharedExperts = c.NSharedExperts
		m.SharedExpertIntermediateSize = c.SharedExpertInterm
		m.FirstDenseLayers = c.FirstKDenseReplace
		if m.SharedExpertIntermediateSize > 0 && m.SharedExperts == 0 {
			m.SharedExperts = 1
		}
	}
	m.QLoraRank, m.KVLoraRank = c.QLoraRank, c.KVLoraRank
	m.QKNopeHeadDim, m.QKRopeHeadDim, m.VHeadDim = c.QKNopeHeadDim, c.QKRopeHeadDim, c.VHeadDim
	m.WeightBytes, m.KVBytes = 2, 2
	if len(c.QuantizationConfig) > 0 && strings.Contains(string(c.QuantizationConfig), "fp8") {
		m.WeightBytes = 1
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func firstNonZero(v ...int) int {
	for _, x := range v {
		if x != 0 {
			return x
		}
	}
	return 0
}

// Validate checks that the architecture is self-consistent.
func (m *Model) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("model %s: %s", m.Name, fmt.Sprintf(format, a...))
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
	if strings.HasSuffix(nameOrPath, ".json") || strings.ContainsRune(nameOrPath, os.PathSeparator) {
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
	return nil, fmt.Errorf("%w %q: not in the catalog (%s) and not a config.json path", ErrUnknownModel, nameOrPath, strings.Join(ModelNames(), ", "))
}
