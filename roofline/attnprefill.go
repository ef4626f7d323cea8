package roofline

import (
	"math"
	"sort"

	"github.com/ftk-dev/ftk/spec"
)

// FlashInfer's FA2 batch prefill over a paged KV cache
// (BatchPrefillWithPagedKVCacheWrapper, the wrapper Frontier's A800
// attention profiler plans and runs: NetX-lab/Frontier
// frontier/profiling/attention/backends/flashinfer_attention_wrapper.py,
// causal, page size = the profile's block_size 16) priced as the kernel
// runs on the SMs, not as a roofline. Read from flashinfer-ai/flashinfer
// include/flashinfer/attention/scheduler.cuh (PrefillPlan,
// PrefillSplitQOKVIndptr, PrefillBinarySearchKVChunkSize,
// FA2DetermineCtaTileQ), prefill.cuh (the paged kernel's dispatch and its
// causal iteration count) and cascade.cuh (VariableLengthMergeStates):
//
//   - The query rows of a sequence are packed with their GQA group
//     (tokens x q heads per KV head) and cut into CTA tiles of 128 packed
//     rows (16 or 64 for short averages).
//   - The plan caps the grid at 2 CTAs per SM per KV head
//     (max_batch_size_if_split = 2 x SMs / KV heads) and binary-searches
//     the smallest KV chunk, in pages of at least 128 tokens, that keeps
//     q tiles x KV chunks under that cap; the KV is split ("split_kv")
//     when that chunk is shorter than the sequence's pages. A prefill with
//     no cached context therefore splits as long as its q tiles number at
//     most half the cap: on the A800 (108 SMs) at TP4 up to 1,728 tokens
//     (108 tiles), unsplit from 1,792 (112 tiles) — the profile's time
//     drops there, 167 -> 116 us.
//   - Each CTA loops over its chunk's keys up to the causal diagonal of
//     its last row in tiles of CTA_TILE_KV keys: 64 for a 128-row tile at
//     head dim 128 in BF16 on sm_80 (NUM_MMA_KV = min(4 by registers, 6 by
//     shared memory at two CTAs a SM)); 128 for the smaller tiles.
//   - A split prefill writes each chunk's partial output and
//     log-sum-exp in FP32 and runs a second kernel,
//     VariableLengthMergeStates, that walks every (token, q head) row
//     and merges its chunks' states (128-thread blocks, a 4-stage
//     shared-memory pipeline over the row's states).
//
// The time is then FloorUs + the time the SMs take over the CTAs' KV-tile
// iterations (IterUs each, for one CTA alone on an SM) and, when split,
// MergeFloorUs + RowUs a merged row + the FP32 states written and read
// back at HBM x L2Gain (they are read right after they are written; the
// A800's 40 MB L2 holds them). The CTAs go out in grid order (blockIdx.x =
// (sequence, q tile, KV chunk), blockIdx.y = KV head), one to every SM,
// then a second to every SM (the plan's two CTAs an SM), then each into
// the slot the next finishing CTA frees; two resident CTAs share their SM
// (flashInferPairRate). On the kernel-traced A800 rows this scores 1.5%
// MAPE where one CTA at a time an SM scores 4.7% and two independent slots
// 13.2%: the time steps up where the CTAs first outnumber the 108 SMs
// (TP2 64-token chunks over 1,600 -> 1,664 cached tokens, 104 -> 112 CTAs,
// 29.8 -> 34.6 us) and where a chunk grows past a multiple of 64 keys
// (3,328 -> 3,456 cached tokens, 39.3 -> 44.4 us), and a causal prefill
// with no context, whose CTAs grow in grid order, ends on SMs that share
// their heaviest CTAs.
//
// A stated approximation: every Ampere prefill is priced as FlashInfer's,
// the backend of the one Ampere attention profile in testdata. vLLM's
// own default on Ampere is FlashAttention-2 (vllm-flash-attn; backend
// selection in vllm/platforms/cuda.py, FLASHINFER on request), whose
// varlen prefill runs one CTA per 128-row tile and head without splitting
// the KV: for serving on Ampere the split and merge terms here may
// over-price short prefills under long prefixes. Not checked: no Ampere
// FlashAttention profile is in testdata.

const (
	// flashInferPageTokens is the KV page (vLLM block) size the plan
	// counts chunks in: vLLM's default block_size 16, the A800 profile's
	// block_size column.
	flashInferPageTokens = 16
	// flashInferMinChunkTokens is the plan's smallest KV chunk:
	// max(128 / page_size, 1) pages.
	flashInferMinChunkTokens = 128
	// flashInferCTAsPerSM is the plan's num_blocks_per_sm (PrefillPlan).
	flashInferCTAsPerSM = 2
	// fp32StateBytes is one partial state of a head dimension element
	// written by the split kernel and read by the merge (FP32).
	fp32StateBytes = 4
)

// PrefillSeqsFeature is the index of an optional feature of the attention
// prefill after its OpFeatures: the number of sequences the equivalent
// (context, chunk) of PrefillEquivalent stands for. FlashInfer tiles each
// sequence on its own, so n sequences of c tokens run n x c / 128 x group
// tiles where one sequence of the equivalent sqrt(n) x c tokens runs
// fewer, longer ones. Fitted predictors never see it; 0 or absent: one.
const PrefillSeqsFeature = 2

// flashInferCTATileQ is FA2DetermineCtaTileQ for head dims below 256 on
// sm_80 and later: 128 packed rows above 64, 64 above 16, else 16.
func flashInferCTATileQ(avgPackedRows int) int {
	switch {
	case avgPackedRows > 64:
		return 128
	case avgPackedRows > 16:
		return 64
	}
	return 16
}

// prefillPlan is what FlashInfer's plan decides for one prefill (the
// method above): seqs equal sequences of q new tokens over ctx cached ones.
type prefillPlan struct {
	seqs, q, ctx  int
	tileQ, tileKV int // CTA rows (packed) and keys a CTA iteration
	tilesQ        int // CTA tiles of one sequence, one KV head
	chunks        int // KV chunks of a sequence (1 unsplit)
	chunkTokens   int
	split         bool
}

// flashInferPlan returns the plan of the causal paged prefill of o for
// x = (context, chunk[, sequences]) on a device of sms SMs.
func flashInferPlan(o *spec.Op, x []float64, sms int) prefillPlan {
	seqs, q, ctx := prefillShape(x) // equal sequences of the equivalent chunk
	p := prefillPlan{seqs: int(seqs), q: int(q), ctx: int(ctx)}
	kvHeads := max(o.KVHeads, 1)
	group := max(o.QHeads/kvHeads, 1)
	p.tileQ = flashInferCTATileQ(p.q * group)
	p.tileKV = 128
	if p.tileQ == 128 {
		p.tileKV = 64
	}
	p.tilesQ = ceilDiv(p.q*group, p.tileQ)
	pages := max(ceilDiv(p.ctx+p.q, flashInferPageTokens), 1)
	// PrefillBinarySearchKVChunkSize, in pages.
	maxCTAs := flashInferCTAsPerSM * sms / kvHeads
	lo, hi := max(flashInferMinChunkTokens/flashInferPageTokens, 1), pages
	for lo < hi {
		mid := (lo + hi) / 2
		if p.seqs*p.tilesQ*ceilDiv(pages, mid) > maxCTAs {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	p.split = lo < pages
	p.chunkTokens, p.chunks = lo*flashInferPageTokens, ceilDiv(pages, lo)
	if !p.split {
		p.chunkTokens, p.chunks = pages*flashInferPageTokens, 1
	}
	return p
}

// flashInferPrefillUs returns the kernel time, in microseconds, of the
// causal paged prefill of o for x = (context, chunk[, sequences]) on a
// device of sms SMs and hbmGBps of HBM bandwidth under curve c.
func flashInferPrefillUs(o *spec.Op, x []float64, c Curve, sms int, hbmGBps float64) float64 {
	p := flashInferPlan(o, x, sms)
	group := max(o.QHeads/max(o.KVHeads, 1), 1)
	// One sequence's CTAs in grid order: KV-tile iterations each.
	work := make([]int, 0, p.tilesQ*p.chunks)
	for t := 0; t < p.tilesQ; t++ {
		end := p.ctx + min(p.q, ceilDiv((t+1)*p.tileQ, group)) // causal end of the tile's last row
		for k := 0; k < p.chunks; k++ {
			keys := min(max(end-k*p.chunkTokens, 0), p.chunkTokens)
			work = append(work, ceilDiv(keys, p.tileKV))
		}
	}
	us := c.FloorUs + sharedSMTime(work, p.seqs*max(o.KVHeads, 1), sms)*c.IterUs
	if p.split {
		rows := float64(p.seqs*p.q) * float64(o.QHeads)
		stateBytes := 2 * rows * float64(p.chunks) * float64(o.HeadDim) * fp32StateBytes
		us += c.MergeFloorUs + rows*c.RowUs + stateBytes/(hbmGBps*1e3*c.L2Gain)
	}
	return us
}

// flashInferPairRate is how much work an SM does with two resident CTAs
// against one, each of the two progressing at half of it: one CTA of four
// warps leaves the tensor cores idle while it waits on its loads, a second
// fills some of that. Scanned on the kernel-traced calibration rows with
// the other terms refitted at each value (MAPE 1.0: 2.39%, 1.2: 1.61%,
// 1.3: 1.48%, 1.4: 1.69%, 1.5: 2.01%, 1.8: 3.13%).
const flashInferPairRate = 1.3

// sharedSMTime returns when the last CTA finishes, in iterations of one CTA
// alone on an SM, when the CTAs of work, repeated reps times (sequences,
// then KV heads), run in grid order on sms SMs of two CTA slots each: the
// first CTAs fill one slot of every SM, then the second; after that each
// CTA takes the slot the next finishing CTA frees. An SM's two resident
// CTAs share it (flashInferPairRate).
func sharedSMTime(work []int, reps, sms int) float64 {
	n := len(work) * reps
	if n == 0 || sms <= 0 {
		return 0
	}
	type sm struct {
		rem  [2]float64 // work left of the resident CTAs
		k    int        // resident CTAs
		at   float64    // time rem was last brought up to
		next float64    // time its first resident CTA finishes
	}
	sms = min(sms, n)
	s := make([]sm, sms)
	rate := func(k int) float64 { // each resident CTA's progress a unit of time
		if k == 2 {
			return flashInferPairRate / 2
		}
		return 1
	}
	i := 0
	ctaWork := func() float64 { w := work[i%len(work)]; i++; return float64(w) }
	for slot := 0; slot < 2; slot++ {
		for j := range s {
			if i < n {
				s[j].rem[s[j].k] = ctaWork()
				s[j].k++
			}
		}
	}
	setNext := func(j int) {
		x := &s[j]
		x.next = math.Inf(1)
		if x.k == 1 {
			x.next = x.at + x.rem[0]/rate(1)
		} else if x.k == 2 {
			x.next = x.at + min(x.rem[0], x.rem[1])/rate(2)
		}
	}
	// A min-heap of the SMs by next, with each SM's place in it.
	h, pos := make([]int, sms), make([]int, sms)
	for j := range s {
		setNext(j)
		h[j], pos[j] = j, j
	}
	swap := func(a, b int) {
		h[a], h[b] = h[b], h[a]
		pos[h[a]], pos[h[b]] = a, b
	}
	less := func(a, b int) bool { return s[h[a]].next < s[h[b]].next }
	fix := func(p int) {
		for p > 0 && less(p, (p-1)/2) {
			swap(p, (p-1)/2)
			p = (p - 1) / 2
		}
		for {
			l, m := 2*p+1, p
			if l < len(h) && less(l, m) {
				m = l
			}
			if l+1 < len(h) && less(l+1, m) {
				m = l + 1
			}
			if m == p {
				return
			}
			swap(p, m)
			p = m
		}
	}
	for p := len(h)/2 - 1; p >= 0; p-- {
		fix(p)
	}
	end := 0.0
	var freed []int
	for {
		t := s[h[0]].next
		if math.IsInf(t, 1) {
			return end
		}
		end = t
		// Retire the CTAs finishing now, on every SM where one does.
		freed = freed[:0]
		for !math.IsInf(s[h[0]].next, 1) && s[h[0]].next <= t {
			j := h[0]
			x := &s[j]
			done := (t - x.at) * rate(x.k)
			kept := 0
			for c := 0; c < x.k; c++ {
				if r := x.rem[c] - done; r > 1e-9 {
					x.rem[kept] = r
					kept++
				}
			}
			x.k, x.at, x.next = kept, t, math.Inf(1)
			fix(0)
			freed = append(freed, j)
		}
		// Refill them breadth first, as at the start: the SMs with
		// fewer resident CTAs first, then in order.
		if len(freed) > 1 {
			sort.Ints(freed)
		}
		for level := 0; level < 2; level++ {
			for _, j := range freed {
				if s[j].k <= level && i < n {
					s[j].rem[s[j].k] = ctaWork()
					s[j].k++
				}
			}
		}
		for _, j := range freed {
			setNext(j)
			fix(pos[j])
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
