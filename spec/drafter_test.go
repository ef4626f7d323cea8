package spec

import (
	"strings"
	"testing"
)

// Each method's drafter runs what vLLM's does: a dense head layer of the
// target's shapes (EAGLE, EAGLE-3 with its own 32,000-token LM head), an
// MoE MTP layer for an MoE target, the whole draft model; n-gram none. Its
// own weights leave out what it shares with the target.
func TestDrafter(t *testing.T) {
	llama, _ := LookupModel("llama-3.1-8b")
	ds, _ := LookupModel("deepseek-v3")
	l := Layout{TP: 1, PP: 1, EP: 1, DP: 1}
	h := int64(llama.HiddenSize)
	layer := llama.layerWeightBytesPerGPU(0, l)
	for _, c := range []struct {
		method, model string
		target        *Model
		moe           bool
		vocab         int
		weights       int64
	}{
		{SpecEagle, "", llama, false, llama.VocabSize, layer + 2*h*h*2},
		{SpecEagle3, "", llama, false, 32000, layer + 3*h*h*2 + 32000*h*2},
		{SpecMTP, "", ds, true, ds.VocabSize, ds.layerWeightBytesPerGPU(ds.NumLayers-1, Layout{TP: 8, PP: 1, EP: 1, DP: 1}) + 2*int64(ds.HiddenSize)*int64(ds.HiddenSize)*2},
		{SpecDraftModel, "llama-3.2-1b", llama, false, llama.VocabSize, -1},
	} {
		s := &Speculative{Method: c.method, NumSpeculativeTokens: 2, Model: c.model}
		d, err := s.Drafter(c.target)
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		lt := l
		if c.target == ds {
			lt.TP = 8
		}
		if d.Model.IsMoELayer(0) != c.moe || d.Model.VocabSize != c.vocab {
			t.Errorf("%s: layer 0 MoE %v, vocabulary %d; want %v, %d", c.method, d.Model.IsMoELayer(0), d.Model.VocabSize, c.moe, c.vocab)
		}
		want := c.weights
		if want < 0 {
			want = d.Model.WeightBytesPerGPU(lt)
		}
		if got := d.WeightBytesPerGPU(lt); got != want || got <= 0 {
			t.Errorf("%s: drafter weights %d bytes, want %d", c.method, got, want)
		}
		if d.KVBytesPerToken(lt) <= 0 {
			t.Errorf("%s: drafter layers hold no KV", c.method)
		}
	}
	if d, _ := (&Speculative{Method: SpecNgram, NumSpeculativeTokens: 3}).Drafter(llama); d.Model != nil || d.WeightBytesPerGPU(l) != 0 {
		t.Error("ngram has a drafter model")
	}
	if _, err := (&Speculative{Method: SpecDraftModel, NumSpeculativeTokens: 3, Model: "qwen3-30b-a3b"}).Drafter(llama); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("a draft model with another vocabulary: err %v", err)
	}
}
