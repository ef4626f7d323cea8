package spec

import (
	"strings"
	"testing"
)

func TestKernelOrigin(t *testing.T) {
	for _, c := range []struct{ source, class string }{
		{"", KernelOriginUnrecorded},
		{"  ", KernelOriginUnrecorded},
		{"roofline", KernelOriginRoofline},
		{"torch:rms_norm", KernelOriginTorch},
		{"inductor:rms_norm", KernelOriginInductor},
		{"vllm._C.rms_norm", KernelOriginVLLM},
		{"torch.nn.functional.linear", KernelOriginVLLM}, // vLLM's unquantized linear calls it
		{"vllm_flash_attn_fa3", KernelOriginVLLM},        // AIConfigurator's name
		{"torch.nn.functional.linear+vllm._C.rms_norm", KernelOriginVLLM},
		{"torch.nn.functional.linear+inductor:qk_norm", KernelOriginInductor},
		{"torch.nn.functional.linear+torch:qk_norm", KernelOriginTorch},
	} {
		if got := KernelOrigin(c.source); got != c.class {
			t.Errorf("KernelOrigin(%q) = %q, want %q", c.source, got, c.class)
		}
	}
}

func TestKernelSourcesLabel(t *testing.T) {
	got := KernelSourcesLabel([]string{"torch.nn.functional.linear", "torch:silu_and_mul", "torch:rms_norm", "torch:rms_norm"})
	want := "plain PyTorch, not vLLM's kernels (torch:rms_norm, torch:silu_and_mul); vLLM's kernels (torch.nn.functional.linear)"
	if got != want {
		t.Errorf("label\n got %q\nwant %q", got, want)
	}
	if got := KernelSourcesLabel(nil); got != "kernels not recorded" {
		t.Errorf("empty label %q", got)
	}
	if got := KernelSourcesLabel([]string{"roofline"}); got != "the roofline device model, no kernel ran" {
		t.Errorf("roofline label %q", got)
	}
	many := KernelSourcesLabel([]string{"vllm.a", "vllm.b", "vllm.c", "vllm.d", "vllm.e", "vllm.f", ""})
	if !strings.Contains(many, "+2 more") || !strings.HasSuffix(many, "; kernels not recorded") {
		t.Errorf("long label %q", many)
	}
}

func TestKernelSourceCellRoundTrip(t *testing.T) {
	by := map[string]string{"mlp_up_proj": "torch.nn.functional.linear", "input_layernorm": "inductor:rms_norm"}
	cell := KernelSourceCell(by)
	if cell != "input_layernorm=inductor:rms_norm;mlp_up_proj=torch.nn.functional.linear" {
		t.Fatalf("cell %q", cell)
	}
	for op, want := range by {
		if got := KernelSourceOf(cell, op); got != want {
			t.Errorf("KernelSourceOf(%q) = %q, want %q", op, got, want)
		}
	}
	if got := KernelSourceOf(cell, "add"); got != "" {
		t.Errorf("unlisted op: %q", got)
	}
	one := KernelSourceCell(map[string]string{"a": "vllm._C.rms_norm", "b": "vllm._C.rms_norm"})
	if one != "vllm._C.rms_norm" || KernelSourceOf(one, "anything") != "vllm._C.rms_norm" {
		t.Errorf("shared cell %q", one)
	}
	if KernelSourceCell(nil) != "" {
		t.Error("empty map gives a cell")
	}
}
