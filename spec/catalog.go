package spec

import (
	"sort"
	"strings"
)

// The built-in model catalog: the architectures users ask for most, so no
// config file is needed for them. Values are those of each model's public
// config.json on the Hugging Face hub.
var modelCatalog = map[string]Model{
	"qwen3-30b-a3b": {
		HubID:        "Qwen/Qwen3-30B-A3B",
		Architecture: "Qwen3MoeForCausalLM", ModelType: "qwen3_moe",
		HiddenSize: 2048, IntermediateSize: 6144, NumLayers: 48, NumHeads: 32, NumKVHeads: 4,
		HeadDim: 128, VocabSize: 151936, MaxPosition: 40960, QKNorm: true, GatedMLP: true,
		NumExperts: 128, TopK: 8, MoEIntermediateSize: 768,
	},
	"qwen3-30b-a3b-tiny": { // Frontier's reduced Qwen3-30B-A3B used by the H800 profiles
		Architecture: "Qwen3MoeForCausalLM", ModelType: "qwen3_moe",
		HiddenSize: 2048, IntermediateSize: 6144, NumLayers: 8, NumHeads: 32, NumKVHeads: 4,
		HeadDim: 128, VocabSize: 151936, MaxPosition: 40960, QKNorm: true, GatedMLP: true,
		NumExperts: 16, TopK: 8, MoEIntermediateSize: 768,
	},
	"qwen3-235b-a22b": {
		HubID:        "Qwen/Qwen3-235B-A22B",
		Architecture: "Qwen3MoeForCausalLM", ModelType: "qwen3_moe",
		HiddenSize: 4096, IntermediateSize: 12288, NumLayers: 94, NumHeads: 64, NumKVHeads: 4,
		HeadDim: 128, VocabSize: 151936, MaxPosition: 40960, QKNorm: true, GatedMLP: true,
		NumExperts: 128, TopK: 8, MoEIntermediateSize: 1536,
	},
	"llama-3.1-8b": {
		HubID:        "meta-llama/Llama-3.1-8B-Instruct",
		Architecture: "LlamaForCausalLM", ModelType: "llama",
		HiddenSize: 4096, IntermediateSize: 14336, NumLayers: 32, NumHeads: 32, NumKVHeads: 8,
		HeadDim: 128, VocabSize: 128256, MaxPosition: 131072, GatedMLP: true,
	},
	"llama-3.3-70b": {
		HubID:        "meta-llama/Llama-3.3-70B-Instruct",
		Architecture: "LlamaForCausalLM", ModelType: "llama",
		HiddenSize: 8192, IntermediateSize: 28672, NumLayers: 80, NumHeads: 64, NumKVHeads: 8,
		HeadDim: 128, VocabSize: 128256, MaxPosition: 131072, GatedMLP: true,
	},
	"llama-3.2-1b": { // the draft model of Llama 3.3 70B's speculative decoding runs (publicrun/runs/ruiz-*)
		HubID:        "meta-llama/Llama-3.2-1B",
		Architecture: "LlamaForCausalLM", ModelType: "llama",
		HiddenSize: 2048, IntermediateSize: 8192, NumLayers: 16, NumHeads: 32, NumKVHeads: 8,
		HeadDim: 64, VocabSize: 128256, MaxPosition: 131072, TiedEmbeddings: true, GatedMLP: true,
	},
	"llama-2-7b": {
		HubID:        "meta-llama/Llama-2-7b-hf",
		Architecture: "LlamaForCausalLM", ModelType: "llama",
		HiddenSize: 4096, IntermediateSize: 11008, NumLayers: 32, NumHeads: 32, NumKVHeads: 32,
		HeadDim: 128, VocabSize: 32000, MaxPosition: 4096, GatedMLP: true,
	},
	"mixtral-8x7b": {
		HubID:        "mistralai/Mixtral-8x7B-v0.1",
		Architecture: "MixtralForCausalLM", ModelType: "mixtral",
		HiddenSize: 4096, IntermediateSize: 14336, NumLayers: 32, NumHeads: 32, NumKVHeads: 8,
		HeadDim: 128, VocabSize: 32000, MaxPosition: 32768, GatedMLP: true,
		NumExperts: 8, TopK: 2, MoEIntermediateSize: 14336,
	},
	"phi-tiny-moe": {
		HubID:        "microsoft/Phi-tiny-MoE-instruct",
		Architecture: "PhiMoEForCausalLM", ModelType: "phimoe",
		HiddenSize: 4096, IntermediateSize: 448, NumLayers: 32, NumHeads: 16, NumKVHeads: 4,
		HeadDim: 128, VocabSize: 32064, MaxPosition: 4096, AttentionBias: true, GatedMLP: true,
		NumExperts: 16, TopK: 2, MoEIntermediateSize: 448,
	},
	"deepseek-v3": { // (FP8 weights)
		HubID:        "deepseek-ai/DeepSeek-V3",
		Architecture: "DeepseekV3ForCausalLM", ModelType: "deepseek_v3",
		HiddenSize: 7168, IntermediateSize: 18432, NumLayers: 61, NumHeads: 128, NumKVHeads: 128,
		HeadDim: 56, VocabSize: 129280, MaxPosition: 163840, GatedMLP: true,
		NumExperts: 256, TopK: 8, MoEIntermediateSize: 2048, SharedExperts: 1, FirstDenseLayers: 3,
		QLoraRank: 1536, KVLoraRank: 512, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128,
		WeightBytes: 1, FP8Compute: true, FP8Block: true, Quantization: "fp8 block 128x128 W8A8",
	},
}

// modelAliases maps other common spellings to catalog names.
var modelAliases = map[string]string{
	"qwen3-a3b-30b-moe":        "qwen3-30b-a3b",
	"llama3.1-8b":              "llama-3.1-8b",
	"llama-3.1-8b-instruct":    "llama-3.1-8b",
	"llama3.3-70b":             "llama-3.3-70b",
	"llama-2-7b-hf":            "llama-2-7b",
	"llama2_7b_dense_example":  "llama-2-7b",
	"mixtral_8x7b_moe":         "mixtral-8x7b",
	"phi-tiny-moe-instruct":    "phi-tiny-moe",
	"qwen3-235b-a22b-instruct": "qwen3-235b-a22b",
}

// CanonicalModelName returns the catalog name for name, and whether it is
// in the catalog: a catalog name, an alias of one, a catalog model's
// Hugging Face id (meta-llama/Llama-3.1-8B-Instruct) or that id's
// repository name alone (Llama-3.1-8B-Instruct), in any case.
func CanonicalModelName(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := modelAliases[n]; ok {
		n = a
	}
	if _, ok := modelCatalog[n]; ok {
		return n, true
	}
	for k, m := range modelCatalog {
		hub := strings.ToLower(m.HubID)
		if hub != "" && (hub == n || hub[strings.LastIndexByte(hub, '/')+1:] == n) {
			return k, true
		}
	}
	return n, false
}

func catalogModel(name string) (*Model, bool) {
	n, ok := CanonicalModelName(name)
	if !ok {
		return nil, false
	}
	m := modelCatalog[n]
	m.Name = n
	if m.WeightBytes == 0 {
		m.WeightBytes = 2
	}
	if m.KVBytes == 0 {
		m.KVBytes = 2
	}
	return &m, true
}

// ModelNames lists the catalog, sorted.
func ModelNames() []string {
	names := make([]string, 0, len(modelCatalog))
	for n := range modelCatalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
