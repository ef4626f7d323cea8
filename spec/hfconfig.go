package spec

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// hfConfig mirrors the config.json keys that ftk reads. Pointers tell a
// missing key from a zero.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	TextConfig            json.RawMessage `json:"text_config"`
	HiddenSize            *int            `json:"hidden_size"`
	IntermediateSize      *int            `json:"intermediate_size"`
	IntermediateSizeMLP   int             `json:"intermediate_size_mlp"` // Llama-4 dense layers
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	VocabSize             *int            `json:"vocab_size"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
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
	InterleaveMoEStep     int             `json:"interleave_moe_layer_step"`
	QLoraRank             int             `json:"q_lora_rank"`
	KVLoraRank            int             `json:"kv_lora_rank"`
	QKNopeHeadDim         int             `json:"qk_nope_head_dim"`
	QKRopeHeadDim         int             `json:"qk_rope_head_dim"`
	VHeadDim              int             `json:"v_head_dim"`
	SlidingWindow         *int            `json:"sliding_window"`
	UseSlidingWindow      *bool           `json:"use_sliding_window"`
	SlidingWindowPattern  int             `json:"sliding_window_pattern"`
	AttentionChunkSize    int             `json:"attention_chunk_size"`
	NoRopeLayers          []int           `json:"no_rope_layers"`
	TorchDtype            string          `json:"torch_dtype"`
	Dtype                 string          `json:"dtype"`
	QuantizationConfig    json.RawMessage `json:"quantization_config"`
}

// The architectures ftk prices, by family, from their public config.json
// files on the Hugging Face hub. A wrapper (multimodal, …ForConditionalGeneration)
// is priced as its language model (text_config); the vision or audio tower
// is not priced and Model.Note says so.
var knownArchitectures = map[string]string{
	"LlamaForCausalLM":                 "llama", // Llama 2/3, Yi, many fine-tunes
	"MistralForCausalLM":               "mistral",
	"MixtralForCausalLM":               "mixtral",
	"Qwen2ForCausalLM":                 "qwen2", // Qwen2, Qwen2.5
	"Qwen2MoeForCausalLM":              "qwen2_moe",
	"Qwen3ForCausalLM":                 "qwen3",
	"Qwen3MoeForCausalLM":              "qwen3_moe",
	"PhiMoEForCausalLM":                "phimoe",
	"DeepseekV2ForCausalLM":            "deepseek_v2",
	"DeepseekV3ForCausalLM":            "deepseek_v3",
	"Gemma2ForCausalLM":                "gemma2",
	"Gemma3ForCausalLM":                "gemma3_text",
	"Gemma3ForConditionalGeneration":   "gemma3 (wrapper)",
	"Llama4ForCausalLM":                "llama4_text",
	"Llama4ForConditionalGeneration":   "llama4 (wrapper)",
	"Mistral3ForConditionalGeneration": "mistral3 (wrapper)",
	"LlavaForConditionalGeneration":    "llava (wrapper)",
}

// KnownArchitectures lists the architectures ParseConfig accepts, sorted.
func KnownArchitectures() []string {
	out := make([]string, 0, len(knownArchitectures))
	for a := range knownArchitectures {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ParseConfig reads a Hugging Face style config.json. name labels the model
// in errors and outputs. The config must name a known architecture; a
// wrapper with a text_config is read as its language model; FP8 weights
// are read from quantization_config (or an FP8 torch_dtype).
func ParseConfig(name string, data []byte) (*Model, error) {
	var top hfConfig
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("model config %s: %w", name, err)
	}
	if len(top.Architectures) == 0 {
		return nil, fmt.Errorf("model config %s: no \"architectures\" entry, so ftk cannot tell how the model computes: add the Hugging Face architecture (e.g. \"architectures\": [\"LlamaForCausalLM\"]); known: %s",
			name, strings.Join(KnownArchitectures(), ", "))
	}
	arch := top.Architectures[0]
	if _, ok := knownArchitectures[arch]; !ok {
		return nil, fmt.Errorf("model config %s: architecture %s is not one ftk prices (known: %s); if it is a Llama-style decoder (GQA attention, gated MLP), set \"architectures\" to [\"LlamaForCausalLM\"] to price it as one, knowing it is an approximation",
			name, arch, strings.Join(KnownArchitectures(), ", "))
	}
	c, note := top, ""
	if len(top.TextConfig) > 0 && string(top.TextConfig) != "null" {
		c = hfConfig{}
		if err := json.Unmarshal(top.TextConfig, &c); err != nil {
			return nil, fmt.Errorf("model config %s: text_config: %w", name, err)
		}
		note = "language model (text_config) of " + arch + "; the vision/audio encoder is not priced"
		// Quantization and dtype are stated once, at the top.
		if len(c.QuantizationConfig) == 0 {
			c.QuantizationConfig = top.QuantizationConfig
		}
		if c.TorchDtype == "" && c.Dtype == "" {
			c.TorchDtype, c.Dtype = top.TorchDtype, top.Dtype
		}
	}
	m, err := c.model(name, arch)
	if err != nil {
		return nil, err
	}
	m.Note = note
	if err := m.applyQuantization(c.QuantizationConfig, firstString(c.TorchDtype, c.Dtype)); err != nil {
		return nil, fmt.Errorf("model config %s: %w", name, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// model builds the architecture from one (text) config.
func (c *hfConfig) model(name, arch string) (*Model, error) {
	var missing []string
	need := func(key string, v *int) int {
		if v == nil {
			missing = append(missing, key)
			return 0
		}
		return *v
	}
	m := &Model{Name: name, Architecture: arch, ModelType: c.ModelType}
	m.HiddenSize = need("hidden_size", c.HiddenSize)
	m.NumLayers = need("num_hidden_layers", c.NumHiddenLayers)
	m.NumHeads = need("num_attention_heads", c.NumAttentionHeads)
	m.VocabSize = need("vocab_size", c.VocabSize)
	m.NumExperts = firstNonZero(c.NumExperts, c.NumLocalExperts, c.NRoutedExperts)
	if m.NumExperts == 0 && (strings.Contains(strings.ToLower(arch), "moe") || c.NumExpertsPerTok > 0 || c.MoEIntermediateSize > 0) {
		// Read as dense, it would be priced as another model.
		return nil, fmt.Errorf("model config %s: an MoE config (%s, num_experts_per_tok %d, moe_intermediate_size %d) with no experts: set num_experts (or num_local_experts, n_routed_experts) to the routed experts per layer",
			name, arch, c.NumExpertsPerTok, c.MoEIntermediateSize)
	}
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
	family := c.ModelType
	// Gemma ties its embeddings by default (transformers' Gemma configs).
	m.TiedEmbeddings = strings.HasPrefix(family, "gemma")
	if c.TieWordEmbeddings != nil {
		m.TiedEmbeddings = *c.TieWordEmbeddings
	}
	// Qwen2 has q/k/v biases without an attention_bias key.
	m.AttentionBias = c.AttentionBias || family == "qwen2" || family == "qwen2_moe"
	switch family {
	case "qwen3", "qwen3_moe", "gemma3_text", "llama4_text":
		m.QKNorm = true
	}
	if c.UseQKNorm != nil {
		m.QKNorm = *c.UseQKNorm
	}
	m.GatedMLP = true // SwiGLU / GeGLU in every known architecture
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
	if family == "llama4_text" {
		// Llama-4 (modeling_llama4.py): every MoE layer has one shared
		// expert as wide as a routed one; dense layers (Maverick
		// interleaves them) use intermediate_size_mlp.
		m.SharedExperts, m.SharedExpertIntermediateSize = 1, m.MoEIntermediateSize
		m.MoELayerStep = max(c.InterleaveMoEStep, 1)
		if c.IntermediateSizeMLP > 0 {
			m.IntermediateSize = c.IntermediateSizeMLP
		}
		// Chunked local attention: layers with RoPE attend within
		// attention_chunk_size; every fourth (NoPE) layer is global.
		if c.AttentionChunkSize > 0 {
			m.AttentionWindow, m.GlobalAttentionEvery = c.AttentionChunkSize, 4
		}
	}
	m.QLoraRank, m.KVLoraRank = c.QLoraRank, c.KVLoraRank
	m.QKNopeHeadDim, m.QKRopeHeadDim, m.VHeadDim = c.QKNopeHeadDim, c.QKRopeHeadDim, c.VHeadDim
	m.slidingWindow(c)
	m.WeightBytes, m.KVBytes = 2, 2
	return m, nil
}

// slidingWindow reads the local-attention pattern of the families that
// have one (their transformers modeling files).
func (m *Model) slidingWindow(c *hfConfig) {
	if c.SlidingWindow == nil || *c.SlidingWindow <= 0 || c.UseSlidingWindow != nil && !*c.UseSlidingWindow {
		return
	}
	w := *c.SlidingWindow
	switch c.ModelType {
	case "gemma2": // even layers slide, odd layers are global
		m.AttentionWindow, m.GlobalAttentionEvery = w, 2
	case "gemma3_text": // five sliding layers, then a global one
		m.AttentionWindow, m.GlobalAttentionEvery = w, max(c.SlidingWindowPattern, 6)
	case "mistral", "mixtral": // every layer slides (Mistral-7B v0.1)
		m.AttentionWindow = w
	case "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phimoe":
		// Qwen configs carry a sliding_window that use_sliding_window
		// (false in the released models) turns off; vLLM does not apply
		// Phi-MoE's either.
	}
}

func firstString(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

func firstNonZero(v ...int) int {
	for _, x := range v {
		if x != 0 {
			return x
		}
	}
	return 0
}
