package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// qwen3AttnOp is the attention prefill of Qwen3-30B-A3B (32 q heads, 4 KV
// heads, head dim 128) on one GPU of tp, as the A800 profile's rows build it.
func qwen3AttnOp(t *testing.T, tp int) spec.Op {
	t.Helper()
	m := rowModel(2048, 32, 4, 1, 1, 128, false)
	o, ok := findOp(spec.LayerOps(m, spec.Layout{TP: tp}, 0), spec.OpAttnPrefill)
	if !ok {
		t.Fatalf("no attention prefill op at TP%d", tp)
	}
	return o
}

// TestFlashInferPrefillPlan checks the plan against FlashInfer's
// scheduler.cuh on the A800 (108 SMs) at the boundaries where the
// profile's kernel times jump.
func TestFlashInferPrefillPlan(t *testing.T) {
	cases := []struct {
		name               string
		tp                 int
		x                  []float64
		tileQ, tileKV      int
		split              bool
		chunks, chunkToken int
	}{
		// TP4: 8 q heads a KV head; 1,728 tokens are 108 tiles of 128
		// packed rows, two chunks fit the cap of 216 CTAs; 1,792 tokens
		// are 112 tiles (measured 167.0 -> 116.4 us).
		{"tp4 1728 splits", 4, []float64{0, 1728}, 128, 64, true, 2, 864},
		{"tp4 1792 does not", 4, []float64{0, 1792}, 128, 64, false, 1, 1792},
		// TP8: 4 q heads a KV head: the boundary doubles (236.4 -> 215.6 us).
		{"tp8 3456 splits", 8, []float64{0, 3456}, 128, 64, true, 2, 1728},
		{"tp8 3584 does not", 8, []float64{0, 3584}, 128, 64, false, 1, 3584},
		// TP2: two KV heads halve the cap to 108 (128.5 -> 67.1 us).
		{"tp2 864 splits", 2, []float64{0, 864}, 128, 64, true, 2, 432},
		{"tp2 896 does not", 2, []float64{0, 896}, 128, 64, false, 1, 896},
		// A 64-token chunk over a long context: the chunk grows past
		// two 64-key tiles at 3,456 cached tokens (39.3 -> 44.4 us).
		{"tp2 64 over 3328", 2, []float64{3328, 64}, 128, 64, true, 27, 128},
		{"tp2 64 over 3456", 2, []float64{3456, 64}, 128, 64, true, 25, 144},
		// Short queries: smaller CTA tiles (FA2DetermineCtaTileQ).
		{"one token", 2, []float64{0, 1}, 16, 128, false, 1, 16},
		{"four tokens", 2, []float64{0, 4}, 64, 128, false, 1, 16},
		// Four sequences of 256 tokens (equivalent chunk 512) tile on
		// their own: 4 x 16 tiles in two chunks each, where one
		// 512-token sequence runs 32 tiles in four.
		{"four sequences", 4, []float64{0, 512, 4}, 128, 64, true, 2, 128},
		{"one sequence", 4, []float64{0, 512}, 128, 64, true, 4, 128},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := qwen3AttnOp(t, c.tp)
			p := flashInferPlan(&o, c.x, 108)
			if p.tileQ != c.tileQ || p.tileKV != c.tileKV || p.split != c.split || p.chunks != c.chunks || p.chunkTokens != c.chunkToken {
				t.Errorf("plan %+v, want tiles %d/%d, split %v, %d chunks of %d tokens", p, c.tileQ, c.tileKV, c.split, c.chunks, c.chunkToken)
			}
		})
	}
}

func TestSharedSMTime(t *testing.T) {
	ones := func(n int) []int {
		w := make([]int, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	pair := 1 / (flashInferPairRate / 2) // one iteration of each of two CTAs sharing an SM
	cases := []struct {
		name       string
		work       []int
		reps, sms  int
		iterations float64
	}{
		{"one CTA an SM", ones(108), 1, 108, 1},
		{"four SMs run two", ones(112), 1, 108, pair},
		{"every SM runs two", ones(216), 1, 108, pair},
		{"a third wave", ones(324), 1, 108, pair + 1},
		{"repeats per KV head", ones(54), 2, 108, 1},
		// SM 0 runs the 10 and the third CTA, sharing until the third
		// is done (after pair), then the 10's remaining 9 alone.
		{"the long CTA sets the time", []int{10, 1, 1, 1}, 1, 2, pair + 9},
		{"empty CTAs", []int{0, 0, 0}, 1, 2, 0},
		{"no work", nil, 1, 108, 0},
	}
	for _, c := range cases {
		if got := sharedSMTime(c.work, c.reps, c.sms); math.Abs(got-c.iterations) > 1e-9 {
			t.Errorf("%s: %v iterations, want %v", c.name, got, c.iterations)
		}
	}
}

// TestA800PrefillFollowsFlashInferPlan scores the built-in Ampere model on
// the A800 profile's attention prefill rows. The roofline it replaced
// (a HalfFLOPs ramp) scored 15.7% on both files, 26% at TP4 and 31% at TP8
// on the kernel-traced rows, and priced the split 1,728-token TP4 prefill
// below the unsplit 1,856-token one.
func TestA800PrefillFollowsFlashInferPlan(t *testing.T) {
	d, err := LookupDevice("a800")
	if err != nil {
		t.Fatal(err)
	}
	prefill := func(meas string, keep func(realPoint) bool) func(realPoint) bool {
		return func(p realPoint) bool {
			return p.device == "a800" && p.meas == meas && p.op.Name == spec.OpAttnPrefill && keep(p)
		}
	}
	every := func(realPoint) bool { return true }
	held := func(p realPoint) bool { return p.heldOut() }
	bounds := []struct {
		name    string
		meas    string
		keep    func(realPoint) bool
		maxMAPE float64
	}{
		{"kernel-traced rows", spec.KernelOnly, every, 3},
		{"kernel-traced held-out rows", spec.KernelOnly, held, 3},
		{"kernel-traced TP4", spec.KernelOnly, func(p realPoint) bool { return p.op.QHeads == 8 }, 4},
		{"kernel-traced TP8", spec.KernelOnly, func(p realPoint) bool { return p.op.QHeads == 4 }, 4},
		{"eager rows", spec.CUDAEvent, every, 10.5},
		{"eager held-out rows", spec.CUDAEvent, held, 10.5},
	}
	for _, b := range bounds {
		var busy func(*Device, realPoint) []float64
		if b.meas == spec.CUDAEvent {
			busy = chainBusy
		}
		mape, n := rowsMAPE(t, d, prefill(b.meas, b.keep), busy)
		if n == 0 {
			t.Fatalf("%s: no rows", b.name)
		}
		t.Logf("%s: %d rows, MAPE %.1f%%", b.name, n, mape)
		if mape > b.maxMAPE {
			t.Errorf("%s: MAPE %.1f%% over %d rows, want <= %.1f%%", b.name, mape, n, b.maxMAPE)
		}
	}
	o := qwen3AttnOp(t, 4)
	r := Roofline{Device: d}
	split, unsplit := r.KernelMs(&o, []float64{0, 1728}), r.KernelMs(&o, []float64{0, 1856})
	if split <= unsplit {
		t.Errorf("TP4 1,728-token prefill (split KV) %.1f us <= 1,856-token (unsplit) %.1f us; measured 167.0 > 121.4 us", split*1e3, unsplit*1e3)
	}
}
