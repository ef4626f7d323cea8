package cost

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Local attention layers (Gemma-2 sliding window here) attend to at most
// the window: at a context far past it, a decode step costs less than the
// same model with global attention everywhere, and at a context within it
// exactly the same.
func TestLocalAttentionCapsContext(t *testing.T) {
	d, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	local := &spec.Model{Name: "sliding", Architecture: "Gemma2ForCausalLM", HiddenSize: 2048, IntermediateSize: 8192,
		NumLayers: 8, NumHeads: 16, NumKVHeads: 8, HeadDim: 128, VocabSize: 32000, GatedMLP: true,
		WeightBytes: 2, KVBytes: 2, AttentionWindow: 1024, GlobalAttentionEvery: 2, MaxPosition: 65536}
	global := *local
	global.AttentionWindow, global.GlobalAttentionEvery = 0, 0
	limits := spec.EngineLimits{MaxNumBatchedTokens: 2048, MaxNumSeqs: 64, MaxModelLen: 65536, BlockSize: spec.DefaultBlockSize}
	step := func(m *spec.Model, ctx int) float64 {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		b := BatchShape{Tokens: 32, Seqs: 32}
		for i := 0; i < 32; i++ {
			b.DecodeContexts = append(b.DecodeContexts, ctx)
		}
		var c StepCost
		cm.StageCost(&b, 0, &c)
		return c.Ms[CompAttention]
	}
	// Equal but for the order of the sums (the local layers' attention
	// is added apart from the global layers'): within one part in 1e12.
	if l, g := step(local, 512), step(&global, 512); math.Abs(l-g) > 1e-12*g {
		t.Errorf("within the window: local %.4f ms, global %.4f ms, want equal", l, g)
	}
	l, g := step(local, 32768), step(&global, 32768)
	// Half the layers read 1,024 instead of 32,768 tokens of KV.
	if !(l < 0.6*g && l > 0.45*g) {
		t.Errorf("at 32k context: local %.4f ms, global %.4f ms, want about half", l, g)
	}
}
