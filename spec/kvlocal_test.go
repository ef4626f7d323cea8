package spec

import "testing"

// Local-attention layers hold at most their window of a sequence's KV
// cache: a 100,000-token sequence of Gemma-3-27B (52 of 62 layers slide
// over 1,024 tokens) takes 6,250 blocks of its 10 global layers plus the
// 65 blocks its window spans in each of 52 local layers (338 blocks of 10
// layers), 6.6x less than all 62 layers at full context.
func TestLocalAttentionKVSizing(t *testing.T) {
	for _, tc := range []struct {
		config            string
		layout            Layout
		full, local       int
		tokens, blockSize int
		wantLocal         int // LocalKVBlocks
	}{
		{"gemma-3-27b-it.json", Layout{TP: 1}, 10, 52, 100000, 16, 338},                  // ceil(52 x 65 / 10)
		{"gemma-3-27b-it.json", Layout{TP: 1}, 10, 52, 100, 16, 37},                      // 7 blocks: the window is not full
		{"gemma-3-27b-it.json", Layout{TP: 2, PP: 2}, 5, 26, 100000, 16, 338},            // stage 0: layers 0-30
		{"gemma-2-9b.json", Layout{TP: 1}, 21, 21, 100000, 16, 257},                      // alternate layers, 4,096-token window
		{"llama-4-scout-17b-16e-instruct.json", Layout{TP: 4}, 12, 36, 100000, 16, 1539}, // 8,192-token chunks, 513 blocks x 3
		{"qwen2.5-7b-instruct.json", Layout{TP: 1}, 28, 0, 100000, 16, 0},                // use_sliding_window false: all global
	} {
		m := loadFixture(t, tc.config)
		full, local := m.KVLayers(tc.layout)
		if full != tc.full || local != tc.local {
			t.Errorf("%s %s: %d full and %d local layers, want %d and %d", tc.config, tc.layout, full, local, tc.full, tc.local)
		}
		if got := m.LocalKVBlocks(tc.layout, tc.tokens, tc.blockSize); got != tc.wantLocal {
			t.Errorf("%s %s: %d tokens hold %d local blocks, want %d", tc.config, tc.layout, tc.tokens, got, tc.wantLocal)
		}
		perLayer := m.KVBytesPerTokenLayer(tc.layout.Normalize().TP)
		if got, want := m.KVBlockBytes(tc.layout, tc.blockSize), int64(tc.full)*perLayer*int64(tc.blockSize); got != want {
			t.Errorf("%s %s: block of %d bytes, want %d (the full layers only)", tc.config, tc.layout, got, want)
		}
		// The whole sequence never takes more than all its layers at full
		// context (but for the rounding up of the local share, one block),
		// and less once it is longer than the window.
		fullCtx := (tc.tokens + tc.blockSize - 1) / tc.blockSize
		hybrid := int64(fullCtx+m.LocalKVBlocks(tc.layout, tc.tokens, tc.blockSize)) * m.KVBlockBytes(tc.layout, tc.blockSize)
		all := int64(fullCtx) * int64(tc.full+tc.local) * perLayer * int64(tc.blockSize)
		if hybrid > all+m.KVBlockBytes(tc.layout, tc.blockSize) || (tc.local > 0 && tc.tokens > 4*m.AttentionWindow && hybrid >= all) {
			t.Errorf("%s %s: %d tokens take %d bytes with windows, %d without", tc.config, tc.layout, tc.tokens, hybrid, all)
		}
	}
}
