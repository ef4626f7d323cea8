package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Gemma-3-27B's 52 sliding-window layers hold at most 1,024 tokens of a
// sequence: the memory plan sizes blocks on its 10 global layers, and a
// run on a cache that fits two 6,200-token sequences (with their windows)
// runs two at a time, with prefix caching on and off, and ends with every
// block free.
func TestLocalAttentionKVCache(t *testing.T) {
	const gemma = "../spec/testdata/configs/gemma-3-27b-it.json"
	m, err := spec.LookupModel(gemma)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Model = gemma
	cfg.Engine.MaxModelLen = 8192
	mem := mustResolve(t, cfg).roles[0].memory
	if want := 10 * m.KVBytesPerTokenLayer(1); mem.KVBytesPerToken != want {
		t.Errorf("KV bytes per token %d, want %d (the 10 global layers)", mem.KVBytesPerToken, want)
	}
	if want := int(mem.KVBytes / (mem.KVBytesPerToken * int64(mem.BlockSize))); mem.Blocks != want {
		t.Errorf("%d blocks, want %d", mem.Blocks, want)
	}

	l := spec.Layout{TP: 1}
	seq := (6200+15)/16 + m.LocalKVBlocks(l, 6200, 16) // 388 + 338
	for _, caching := range []bool{false, true} {
		cfg.Engine.EnablePrefixCaching = caching
		cfg.Engine.NumGPUBlocksOverride = 2*seq + 10
		rs := make([]spec.Request, 6)
		asked := map[int]int{}
		for i := range rs {
			rs[i] = spec.Request{ID: i, PromptTokens: 6000, OutputTokens: 200}
			asked[i] = 200
		}
		sink := &memSink{}
		var most int
		obs := observerFunc(func(r *StepRecord) { most = max(most, r.Seqs) })
		sim, err := New(cfg, Options{Requests: sink, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := sim.Run(NewSliceSource(rs))
		if err != nil {
			t.Fatal(err)
		}
		checkConservation(t, sum, sink.rows, asked, sim)
		if most != 2 || sum.Metrics.Preemptions != 0 {
			t.Errorf("prefix caching %v: at most %d sequences a step, %d preemptions; want 2 and 0", caching, most, sum.Metrics.Preemptions)
		}
	}
}

// observerFunc adapts a function to StepObserver.
type observerFunc func(*StepRecord)

func (f observerFunc) ObserveStep(r *StepRecord) { f(r) }
