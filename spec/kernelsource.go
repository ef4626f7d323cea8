package spec

import (
	"fmt"
	"slices"
	"strings"
)

// Kernel sources: the kernel (or call) behind a measured row, as
// AIConfigurator's tables record one per row (their kernel_source
// column). collect writes one per operator, ingest keeps it with every
// sample, fit carries the bundle's into its metadata, and fit's and
// simulate's summaries say what the timings are of: a bundle fitted on
// plain PyTorch rows does not predict vLLM's kernels.
//
// A source is a free-form name; its origin is read from its prefix:
//
//	torch:<op>     plain eager PyTorch written by ftk's worker: not vLLM's kernels
//	inductor:<op>  torch.compile (Inductor) of the op as vLLM writes it: what
//	               vLLM's compiled graph modes run when its custom ops are off
//	roofline       collect's synthetic backend: the device model, no kernel ran
//	anything else  a named kernel of vLLM's or the exact call vLLM makes
//	               ("vllm._C.rms_norm", "torch.nn.functional.linear",
//	               "vllm.fused_experts", AIConfigurator's "vllm_flash_attn_fa3")
const (
	KernelOriginVLLM       = "vllm"
	KernelOriginInductor   = "inductor"
	KernelOriginTorch      = "torch"
	KernelOriginRoofline   = "roofline"
	KernelOriginUnrecorded = "unrecorded"
)

// Kernel source prefixes and names collect writes.
const (
	KernelPrefixTorch    = "torch:"
	KernelPrefixInductor = "inductor:"
	KernelSourceRoofline = "roofline"
)

// KernelOrigin is the origin of a kernel source (KernelOrigin* constants):
// "" is unrecorded (a profiler's file that names none). A source of
// several kernels joined by "+" (a projection and the norms timed with
// it) has the origin of its least faithful part: plain PyTorch before
// Inductor before vLLM's.
func KernelOrigin(source string) string {
	if parts := strings.Split(source, "+"); len(parts) > 1 {
		origins := map[string]bool{}
		for _, p := range parts {
			origins[KernelOrigin(p)] = true
		}
		for _, o := range []string{KernelOriginTorch, KernelOriginInductor, KernelOriginUnrecorded, KernelOriginRoofline} {
			if origins[o] {
				return o
			}
		}
		return KernelOriginVLLM
	}
	s := strings.TrimSpace(source)
	switch {
	case s == "":
		return KernelOriginUnrecorded
	case s == KernelSourceRoofline:
		return KernelOriginRoofline
	case strings.HasPrefix(s, KernelPrefixTorch):
		return KernelOriginTorch
	case strings.HasPrefix(s, KernelPrefixInductor):
		return KernelOriginInductor
	}
	return KernelOriginVLLM
}

// kernelOriginWords are the classes in the order a label lists them, each
// with what it means.
var kernelOriginWords = []struct{ class, words string }{
	{KernelOriginTorch, "plain PyTorch, not vLLM's kernels"},
	{KernelOriginInductor, "Inductor-compiled as vLLM's compiled graph modes run them"},
	{KernelOriginVLLM, "vLLM's kernels"},
	{KernelOriginRoofline, "the roofline device model, no kernel ran"},
	{KernelOriginUnrecorded, "kernels not recorded"},
}

// maxLabelSources is how many sources of a class a label names.
const maxLabelSources = 4

// KernelSourcesLabel says in words what kernels the sources are, origin by
// origin, plain PyTorch first: "plain PyTorch, not vLLM's kernels
// (torch:rms_norm, torch:silu_and_mul); vLLM's kernels
// (torch.nn.functional.linear)". An empty list is "kernels not recorded".
func KernelSourcesLabel(sources []string) string {
	by := map[string][]string{}
	for _, s := range sources {
		c := KernelOrigin(s)
		if s != "" && !slices.Contains(by[c], s) {
			by[c] = append(by[c], s)
		} else if s == "" && by[c] == nil {
			by[c] = []string{}
		}
	}
	if len(by) == 0 {
		return "kernels not recorded"
	}
	var parts []string
	for _, cw := range kernelOriginWords {
		names, ok := by[cw.class]
		if !ok {
			continue
		}
		if len(names) == 0 || cw.class == KernelOriginRoofline {
			parts = append(parts, cw.words)
			continue
		}
		slices.Sort(names)
		shown := names
		more := ""
		if len(shown) > maxLabelSources {
			shown, more = shown[:maxLabelSources], fmt.Sprintf(", +%d more", len(names)-maxLabelSources)
		}
		parts = append(parts, fmt.Sprintf("%s (%s%s)", cw.words, strings.Join(shown, ", "), more))
	}
	return strings.Join(parts, "; ")
}

// KernelSourceOf returns the kernel source of operator op in a
// kernel_source cell: a cell holding one name applies to every operator
// of its row; a cell of "op=name" pairs separated by ";" (a row timing
// several operators with different kernels) names each operator's, and an
// operator it does not list has none ("").
func KernelSourceOf(cell, op string) string {
	cell = strings.TrimSpace(cell)
	if !strings.Contains(cell, "=") {
		return cell
	}
	for _, pair := range strings.Split(cell, ";") {
		k, v, ok := strings.Cut(pair, "=")
		if ok && strings.TrimSpace(k) == op {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// KernelSourceCell writes the kernel_source cell of a row from its
// operators' sources (op -> source): the one name when every operator
// shares it, else "op=name" pairs in operator order separated by ";".
func KernelSourceCell(byOp map[string]string) string {
	ops := make([]string, 0, len(byOp))
	first, same := "", true
	for op, s := range byOp {
		ops = append(ops, op)
		if len(ops) == 1 {
			first = s
		} else if s != first {
			same = false
		}
	}
	if len(ops) == 0 {
		return ""
	}
	if same {
		return first
	}
	slices.Sort(ops)
	pairs := make([]string, len(ops))
	for i, op := range ops {
		pairs[i] = op + "=" + byOp[op]
	}
	return strings.Join(pairs, ";")
}
