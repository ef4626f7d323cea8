package spec

import (
	"strings"
	"testing"
)

func TestLayoutValidate(t *testing.T) {
	cases := []struct {
		model   string
		l       Layout
		wantErr string // empty: valid
	}{
		{"qwen3-30b-a3b", Layout{TP: 8, EP: 8}, ""},
		{"qwen3-30b-a3b", Layout{TP: 2, PP: 4, EP: 2}, ""},
		{"llama-3.1-8b", Layout{TP: 3}, "TP=3 does not divide the 32 attention heads"},
		{"qwen3-30b-a3b", Layout{TP: 8, EP: 3}, "EP=3 does not divide the 128 experts"},
		{"mixtral-8x7b", Layout{TP: 8, EP: 16}, "EP=16 does not divide the 8 experts"},
		{"llama-3.1-8b", Layout{TP: 2, EP: 2}, "needs an MoE model"},
		{"llama-2-7b", Layout{PP: 64}, "PP=64 exceeds the 32 layers"},
		{"qwen3-30b-a3b", Layout{TP: 2, EP: 4}, "EP=4 must divide TP x DP = 2"},
		{"llama-3.1-8b", Layout{TP: -1}, "TP must be positive"},
	}
	for _, c := range cases {
		m, err := LookupModel(c.model)
		if err != nil {
			t.Fatal(err)
		}
		err = c.l.Validate(m)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s %s: unexpected error %v", c.model, c.l, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s %s: error %v, want it to contain %q", c.model, c.l, err, c.wantErr)
		}
	}
}

func TestStageLayers(t *testing.T) {
	m, _ := LookupModel("qwen3-30b-a3b") // 48 layers
	l := Layout{PP: 5}
	covered := 0
	for s := 0; s < 5; s++ {
		first, end := l.StageLayers(m, s)
		if first != covered {
			t.Fatalf("stage %d starts at %d, want %d", s, first, covered)
		}
		if n := end - first; n != 9 && n != 10 {
			t.Errorf("stage %d has %d layers, want 9 or 10", s, n)
		}
		covered = end
	}
	if covered != 48 {
		t.Errorf("stages cover %d layers, want 48", covered)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, json, wantErr string
	}{
		{"no-hidden", `{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8}`, "missing required field hidden_size"},
		{"no-layers-vocab", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_attention_heads": 4, "intermediate_size": 8}`, "missing required field num_hidden_layers, vocab_size"},
		{"bad-json", `{"architectures": ["LlamaForCausalLM"], "hidden_size": `, "model config bad-json"},
		{"bad-kv", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 10, "intermediate_size": 8}`, "num_key_value_heads 3 must divide"},
		{"bad-topk", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "num_experts": 4, "num_experts_per_tok": 5, "moe_intermediate_size": 8}`, "num_experts_per_tok 5 must be in 1..4"},
		{"no-architectures", `{"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8}`, `no "architectures" entry`},
		{"unknown-arch", `{"architectures": ["FalconForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8}`, "architecture FalconForCausalLM is not one ftk prices"},
		{"awq", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8, "quantization_config": {"quant_method": "awq", "bits": 4}}`, `quant_method "awq" is not supported`},
		{"int4-ct", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8, "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}}}`, "4-bit weights is not supported"},
		{"vocab-1e15", `{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 1000000000000000, "intermediate_size": 14336}`, "vocab_size 1000000000000000 is beyond any model"},
		{"params-overflow", `{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 1000000, "num_hidden_layers": 4000, "num_attention_heads": 32, "vocab_size": 10, "num_experts": 60000, "num_experts_per_tok": 8, "moe_intermediate_size": 1000000}`, "beyond any model"},
		{"moe-no-experts", `{"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8, "num_experts": 0, "num_experts_per_tok": 8, "moe_intermediate_size": 8}`, "an MoE config"},
		{"text-config-missing", `{"architectures": ["Gemma3ForConditionalGeneration"], "text_config": {"model_type": "gemma3_text", "hidden_size": 8, "num_attention_heads": 4}}`, "missing required field num_hidden_layers, vocab_size"},
	}
	for _, c := range cases {
		_, err := ParseConfig(c.name, []byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.wantErr)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	if _, err := LookupModel("gpt-17"); err == nil || !strings.Contains(err.Error(), `unknown model "gpt-17"`) {
		t.Errorf("unknown model: %v", err)
	}
	if _, err := LookupDevice("tpu-v9"); err == nil || !strings.Contains(err.Error(), `unknown device "tpu-v9"`) {
		t.Errorf("unknown device: %v", err)
	}
	if d, err := LookupDevice("A100-80GB"); err != nil || d.Name != "a100" {
		t.Errorf("alias A100-80GB: %v %v", d, err)
	}
}
