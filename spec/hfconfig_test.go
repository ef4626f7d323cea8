package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func loadFixture(t *testing.T, file string) *Model {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "configs", file))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseConfig(strings.TrimSuffix(file, ".json"), data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Configs as served, one per family (testdata/configs, each modelled on
// the public config.json it names): parameters against the publisher's
// totals, and the family traits that change cost.
func TestConfigFamilies(t *testing.T) {
	for _, c := range []struct {
		file          string
		total, active float64 // billions, published; active 0 = dense (= total)
		unit          float64
		headDim       int
		qkNorm        bool
		moeLayers     int
		localLayers   int    // of the model's layers
		window        int    // attention window of the local layers
		quant         string // substring of Model.Quantization ("" = BF16)
		weightBytes   int
		fp8           bool
		wrapper       bool
	}{
		// Llama 4 model card: 109B total, 17B active; the 0.9B vision
		// encoder is not priced (the language model is 108B).
		{file: "llama-4-scout-17b-16e-instruct.json", total: 108, active: 17, unit: 1, headDim: 128, qkNorm: true, moeLayers: 48, localLayers: 36, window: 8192, weightBytes: 2, wrapper: true},
		{file: "llama-4-scout-17b-16e-instruct-fp8-dynamic.json", total: 108, active: 17, unit: 1, headDim: 128, qkNorm: true, moeLayers: 48, localLayers: 36, window: 8192, quant: "compressed-tensors fp8 W8A8", weightBytes: 1, fp8: true, wrapper: true},
		// Llama 4 model card: 400B total, 17B active; MoE every other layer.
		{file: "llama-4-maverick-17b-128e-instruct-fp8.json", total: 400, active: 17, unit: 1, headDim: 128, moeLayers: 24, localLayers: 36, window: 8192, quant: "fbgemm fp8", weightBytes: 1, fp8: true, wrapper: true},
		{file: "mistral-7b-instruct-v0.3.json", total: 7.25, unit: 0.01, headDim: 128, weightBytes: 2},                  // Mistral 7B v0.3 card
		{file: "mistral-nemo-instruct-2407.json", total: 12.2, unit: 0.1, headDim: 128, weightBytes: 2},                 // Mistral NeMo announcement: 12B (12.2B)
		{file: "qwen2.5-7b-instruct.json", total: 7.61, unit: 0.01, headDim: 128, weightBytes: 2},                       // Qwen2.5-7B-Instruct card
		{file: "yi-34b.json", total: 34.4, unit: 0.1, headDim: 128, weightBytes: 2},                                     // Yi paper (arXiv 2403.04652), 34.4B
		{file: "gemma-2-9b.json", total: 9.24, unit: 0.01, headDim: 256, localLayers: 21, window: 4096, weightBytes: 2}, // Gemma 2 report: 9.24B
		// Gemma 3 report: 27B (27.4B with the 0.4B SigLIP encoder).
		{file: "gemma-3-27b-it.json", total: 27, unit: 1, headDim: 128, qkNorm: true, localLayers: 52, window: 1024, weightBytes: 2, wrapper: true},
		// Llama 3.1 card: 8.03B; an FP8 torch_dtype alone means 1-byte weights.
		{file: "llama-3.1-8b-instruct-fp8-dtype-only.json", total: 8.03, unit: 0.01, headDim: 128, quant: "float8_e4m3fn", weightBytes: 1, fp8: true},
	} {
		t.Run(c.file, func(t *testing.T) {
			m := loadFixture(t, c.file)
			total, active := m.Params()
			tb, ab := float64(total)/1e9, float64(active)/1e9
			if !within(tb, c.total, c.unit) {
				t.Errorf("total %.3fB, published %gB", tb, c.total)
			}
			if want := c.active; want > 0 && !within(ab, want, c.unit) {
				t.Errorf("active %.3fB, published %gB", ab, want)
			}
			if m.HeadDim != c.headDim || m.QKNorm != c.qkNorm {
				t.Errorf("head_dim %d qk_norm %v, want %d %v", m.HeadDim, m.QKNorm, c.headDim, c.qkNorm)
			}
			moe, local := 0, 0
			for i := 0; i < m.NumLayers; i++ {
				if m.IsMoELayer(i) {
					moe++
				}
				if m.IsLocalAttentionLayer(i) {
					local++
				}
			}
			if moe != c.moeLayers || local != c.localLayers || m.AttentionWindow != c.window && c.localLayers > 0 {
				t.Errorf("%d MoE layers, %d local-attention layers (window %d), want %d, %d (%d)", moe, local, m.AttentionWindow, c.moeLayers, c.localLayers, c.window)
			}
			if (c.quant == "") != (m.Quantization == "") || !strings.Contains(m.Quantization, c.quant) || m.WeightBytes != c.weightBytes || m.FP8Compute != c.fp8 {
				t.Errorf("quantization %q, %d-byte weights, fp8 compute %v; want %q, %d, %v", m.Quantization, m.WeightBytes, m.FP8Compute, c.quant, c.weightBytes, c.fp8)
			}
			if c.wrapper != strings.Contains(m.Note, "text_config") {
				t.Errorf("note %q: a wrapper must say it is priced as its language model", m.Note)
			}
		})
	}
}

// Llama-4's MoE layers carry a shared expert beside the routed ones;
// local layers attend within the 8,192-token chunk.
func TestLlama4SharedExpertAndChunkedAttention(t *testing.T) {
	m := loadFixture(t, "llama-4-scout-17b-16e-instruct.json")
	ops := LayerOps(m, Layout{TP: 4}, 0)
	var shared bool
	for _, o := range ops {
		if o.Name == OpSharedUpProj && o.N == 2*8192/4 {
			shared = true
		}
	}
	if !shared {
		t.Errorf("layer 0 of Llama-4 Scout at TP4 has no shared expert of width 8192/4")
	}
	if got := m.AttentionContext(0, 100000); got != 8192 {
		t.Errorf("local layer 0 attends to %d of 100,000 cached tokens, want the 8,192 chunk", got)
	}
	if got := m.AttentionContext(3, 100000); got != 100000 {
		t.Errorf("global layer 3 attends to %d, want all 100,000", got)
	}
}

// FP8 weights take one byte: a W8A8 FP8 checkpoint's layers weigh half
// its BF16 one's (their pricing: roofline's TestFP8GEMMPeak).
func TestFP8Sizing(t *testing.T) {
	bf16 := loadFixture(t, "llama-4-scout-17b-16e-instruct.json")
	fp8 := loadFixture(t, "llama-4-scout-17b-16e-instruct-fp8-dynamic.json")
	l := Layout{TP: 4}
	wb, wf := bf16.WeightBytesPerGPU(l), fp8.WeightBytesPerGPU(l)
	// Layers halve; the BF16 embedding and LM head (2 x 202048 x 5120 x 2
	// bytes / 4) do not.
	emb := int64(2 * 202048 * 5120 * 2 / 4)
	if got := float64(wf-emb) / float64(wb-emb); got < 0.499 || got > 0.501 {
		t.Errorf("FP8 layer weights are %.3f of BF16, want 0.5", got)
	}
}

func TestKVCacheDtype(t *testing.T) {
	m, _ := LookupModel("llama-3.1-8b")
	f, err := m.WithKVCacheDtype("fp8")
	if err != nil {
		t.Fatal(err)
	}
	if l := (Layout{TP: 1}); 2*f.KVBytesPerToken(l) != m.KVBytesPerToken(l) || m.KVBytes != 2 {
		t.Errorf("fp8 KV cache %d bytes/token, BF16 %d: want half (and the original untouched)", f.KVBytesPerToken(l), m.KVBytesPerToken(l))
	}
	ops := LayerOps(f, Layout{}, 0)
	if i := slices.IndexFunc(ops, func(o Op) bool { return o.Name == OpAttnDecode }); ops[i].ElemBytes != 1 {
		t.Errorf("decode attention reads %d-byte KV elements, want 1", ops[i].ElemBytes)
	}
	for _, ok := range []string{"auto", "bfloat16", "fp8_e4m3", "fp8_e5m2"} {
		if _, err := m.WithKVCacheDtype(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := m.WithKVCacheDtype("int3"); err == nil || !strings.Contains(err.Error(), `unknown KV cache dtype "int3"`) {
		t.Errorf("int3: %v", err)
	}
}

// The shared configs (testdata/models, Frontier's) all name a known
// architecture, and DeepSeek-V3's block FP8 is read as such.
func TestSharedConfigsParse(t *testing.T) {
	m := loadShared(t, "deepseek-v3.json")
	if m.WeightBytes != 1 || !m.FP8Compute || !strings.Contains(m.Quantization, "block 128x128") {
		t.Errorf("DeepSeek-V3: %d-byte weights, fp8 compute %v, %q", m.WeightBytes, m.FP8Compute, m.Quantization)
	}
	files, _ := filepath.Glob(filepath.Join(sharedDir, "models", "*.json"))
	if len(files) == 0 {
		t.Fatal("no shared model configs")
	}
	for _, f := range files {
		loadShared(t, filepath.Base(f))
	}
}
