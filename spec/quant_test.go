package spec

import (
	"encoding/json"
	"testing"
)

// Per-tensor FP8 activation scales are static only where the checkpoint
// says so (fp8 activation_scheme static) or always are (ModelOpt FP8):
// vLLM's Fp8Config defaults to dynamic, and block FP8, fbgemm_fp8 and
// compressed-tensors' per-token activations are not per-tensor static.
func TestFP8StaticScales(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   bool
	}{
		{`{"quant_method": "fp8", "activation_scheme": "static"}`, true},
		{`{"quant_method": "fp8", "activation_scheme": "dynamic"}`, false},
		{`{"quant_method": "fp8"}`, false},
		{`{"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}`, false},
		{`{"quant_method": "modelopt", "quant_algo": "FP8"}`, true},
		{`{"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}}`, true},
		{`{"quant_method": "fbgemm_fp8"}`, false},
		{`{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}, "input_activations": {"num_bits": 8, "type": "float"}}}}`, false},
	} {
		var m Model
		if err := m.applyQuantization(json.RawMessage(tc.config), "bfloat16"); err != nil {
			t.Fatalf("%s: %v", tc.config, err)
		}
		if !m.FP8Compute || m.FP8StaticScales != tc.want {
			t.Errorf("%s: FP8 compute %v, static scales %v, want true, %v", tc.config, m.FP8Compute, m.FP8StaticScales, tc.want)
		}
	}
}

// A MoE layer's grouped GEMM and alignment carry the model's static
// scales (what picks FlashInfer's CUTLASS MoE in vLLM 0.24 on Hopper).
func TestFP8StaticScalesReachMoEOps(t *testing.T) {
	base, err := LookupModel("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	m := *base
	m.WeightBytes, m.FP8Compute, m.FP8StaticScales = 1, true, true
	n := 0
	for _, o := range LayerOps(&m, Layout{TP: 1}, 0) {
		if o.Name == OpMoEGroupedGEMM || o.Name == OpMoEShuffling {
			n++
			if !o.FP8StaticScales {
				t.Errorf("%s: no static scales", o.Name)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d MoE ops, want the grouped GEMM and the alignment", n)
	}
}
