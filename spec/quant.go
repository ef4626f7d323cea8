package spec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// quantConfig is the part of a quantization_config ftk reads. Formats
// (their public configs on the Hugging Face hub):
//   - "fp8" (transformers FineGrainedFP8 / vLLM Fp8Config): per-tensor W8A8
//     ("activation_scheme" dynamic or static, e.g.
//     RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8), or block FP8 with
//     "weight_block_size" [128, 128] (deepseek-ai/DeepSeek-V3);
//   - "fbgemm_fp8": per-channel FP8 weights, dynamic per-token FP8
//     activations (meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8);
//   - "compressed-tensors": config_groups whose weights (and
//     input_activations) are {"num_bits": 8, "type": "float"}
//     (RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic), or "int" for
//     INT8 W8A8;
//   - "modelopt": NVIDIA ModelOpt, "quant_algo": "FP8".
type quantConfig struct {
	QuantMethod      string             `json:"quant_method"`
	ActivationScheme string             `json:"activation_scheme"`
	WeightBlockSize  []int              `json:"weight_block_size"`
	QuantAlgo        string             `json:"quant_algo"`
	ConfigGroups     map[string]qcGroup `json:"config_groups"`
	Quantization     *struct {
		QuantAlgo string `json:"quant_algo"`
	} `json:"quantization"`
}

type qcGroup struct {
	Weights          *qcTensor `json:"weights"`
	InputActivations *qcTensor `json:"input_activations"`
}

type qcTensor struct {
	NumBits int    `json:"num_bits"`
	Type    string `json:"type"`
}

// applyQuantization sets WeightBytes, FP8Compute and Quantization from a
// config's quantization_config and dtype. Unknown or sub-byte schemes are
// errors: sizing them as BF16 would be a silent guess.
func (m *Model) applyQuantization(raw json.RawMessage, dtype string) error {
	if len(raw) == 0 || string(raw) == "null" {
		if strings.HasPrefix(strings.ToLower(dtype), "float8") {
			// An FP8 checkpoint without a quantization_config: 1-byte
			// weights, priced as vLLM's fp8 method runs them (W8A8), and
			// labelled so the reader sees where the figure comes from.
			m.WeightBytes, m.FP8Compute, m.Quantization = 1, true, "fp8 (torch_dtype "+dtype+")"
		}
		return nil
	}
	var q quantConfig
	if err := json.Unmarshal(raw, &q); err != nil {
		return fmt.Errorf("quantization_config: %w", err)
	}
	method := strings.ToLower(q.QuantMethod)
	switch method {
	case "fp8":
		m.WeightBytes, m.FP8Compute = 1, true
		m.Quantization = "fp8 per-tensor W8A8"
		if len(q.WeightBlockSize) == 2 {
			m.FP8Block = true
			m.Quantization = fmt.Sprintf("fp8 block %dx%d W8A8", q.WeightBlockSize[0], q.WeightBlockSize[1])
		} else if strings.EqualFold(q.ActivationScheme, "static") {
			// vLLM's Fp8Config defaults to dynamic activation scales.
			m.FP8StaticScales = true
		}
		return nil
	case "fbgemm_fp8":
		m.WeightBytes, m.FP8Compute, m.Quantization = 1, true, "fbgemm fp8 per-channel W8A8"
		return nil
	case "modelopt":
		algo := q.QuantAlgo
		if q.Quantization != nil {
			algo = q.Quantization.QuantAlgo
		}
		if strings.EqualFold(algo, "fp8") {
			// ModelOpt FP8 checkpoints carry static per-tensor scales for
			// weights and activations (vLLM's ModelOptFp8Config).
			m.WeightBytes, m.FP8Compute, m.FP8StaticScales, m.Quantization = 1, true, true, "modelopt fp8 W8A8"
			return nil
		}
		return fmt.Errorf("quantization_config: modelopt %s is not supported (FP8 is): price the BF16 model, or an FP8 checkpoint", algo)
	case "compressed-tensors":
		return m.compressedTensors(q)
	}
	return fmt.Errorf("quantization_config: quant_method %q is not supported (fp8, fbgemm_fp8, compressed-tensors 8-bit and modelopt FP8 are); sizing it as BF16 would overstate its memory and understate its speed", q.QuantMethod)
}

func (m *Model) compressedTensors(q quantConfig) error {
	if len(q.ConfigGroups) == 0 {
		return fmt.Errorf("quantization_config: compressed-tensors without config_groups")
	}
	var w, a *qcTensor
	for _, g := range q.ConfigGroups {
		if g.Weights == nil {
			continue
		}
		if w != nil && (*w != *g.Weights) {
			return fmt.Errorf("quantization_config: compressed-tensors groups with different weight formats (%d-bit %s and %d-bit %s) are not supported", w.NumBits, w.Type, g.Weights.NumBits, g.Weights.Type)
		}
		w, a = g.Weights, g.InputActivations
	}
	if w == nil || w.NumBits != 8 {
		bits := 0
		if w != nil {
			bits = w.NumBits
		}
		return fmt.Errorf("quantization_config: compressed-tensors with %d-bit weights is not supported (8-bit float or int is)", bits)
	}
	m.WeightBytes = 1
	w8a8 := a != nil && a.NumBits == 8
	switch {
	case w.Type == "float" && w8a8:
		// vLLM runs its MoE layers with CUTLASS on Hopper (roofline/fp8moe.go).
		m.FP8Compute, m.FP8CutlassMoE, m.Quantization = true, true, "compressed-tensors fp8 W8A8"
	case w.Type == "float":
		m.Quantization = "compressed-tensors fp8 weight-only (BF16 compute)"
	case w8a8:
		// INT8 tensor cores run at the FP8 rate on Hopper (H100 datasheet:
		// 1,979 TOPS INT8 = FP8).
		m.FP8Compute, m.Quantization = true, "compressed-tensors int8 W8A8"
	default:
		m.Quantization = "compressed-tensors int8 weight-only (BF16 compute)"
	}
	return nil
}

// KVCacheBytes returns the bytes per KV-cache element of a vLLM
// --kv-cache-dtype value: "auto" (the model's dtype, BF16 here),
// "bfloat16"/"float16", or "fp8", "fp8_e4m3", "fp8_e5m2".
func KVCacheBytes(dtype string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(dtype)) {
	case "", "auto", "bfloat16", "bf16", "float16", "fp16", "half":
		return 2, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc":
		return 1, nil
	}
	return 0, fmt.Errorf("unknown KV cache dtype %q: use auto, bfloat16, fp8, fp8_e4m3 or fp8_e5m2", dtype)
}

// WithKVCacheDtype returns a copy of m whose KV cache holds elements of
// the given --kv-cache-dtype.
func (m Model) WithKVCacheDtype(dtype string) (*Model, error) {
	b, err := KVCacheBytes(dtype)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	m.KVBytes = b
	return &m, nil
}
