package roofline

import "github.com/ftk-dev/ftk/spec"

// Frontier's attention profiler times the ops of one attention call one
// after another with CUDA event pairs, like the linear-op profiler
// (eventchain.go), but in a short run that starts from an idle GPU
// (NetX-lab/Frontier frontier/profiling/attention/attention_wrapper.py,
// profile(): plan, 3 warm-up forward passes, torch.cuda.synchronize, 5
// timed passes, synchronize; each op's statistics over its 5 readings).
// A pass is the FlashInfer wrapper's forward
// (backends/flashinfer_attention_wrapper.py): the input reshape (views, no
// kernel), torch.empty_like for the output (untimed), the KV-cache write
// (vLLM's reshape_and_cache_flash), a permute of the cache (untimed), the
// prefill run and the decode run (each timed, an empty block when the
// batch has none), the output reshape (a view). When the attention kernel
// outlasts the host's pass, the GPU falls further behind each pass: the
// first pass reads host times (a reshape 17 us on the A800), the later
// ones the event gap (3.8 us) and kernels, and the median of the five
// readings is the third pass's (the readings move one way from the idle
// start, so the middle one is the median).

// attnProfilerPasses is the number of timed passes after the sync.
const attnProfilerPasses = 5

// attnForward is the order of the timed blocks of one pass.
var attnForward = []string{spec.OpAttnInputReshape, spec.OpAttnKVCacheSave, spec.OpAttnPrefill, spec.OpAttnDecode, spec.OpAttnOutputReshape}

// Host time of the attention profiler outside the ops a row scores:
//   - attnEmptyBlockUs, a timed block that runs nothing (the prefill block
//     of a decode-only batch, the decode block of a prefill-only one):
//     measured, the A800 eager rows read 11.6 us (decode rows' prefill
//     block) and 12.5 us (prefill rows' decode block), medians over the
//     rows whose GPU is idle; its events' GPU time is not counted;
//   - attnUntimedUs, each untimed statement between two blocks (empty_like,
//     permute) and attnPassGapUs, the loop from one pass's output reshape
//     to the next pass's input reshape: guesses (a few Python calls each).
var attnEmptyBlockUs, attnUntimedUs, attnPassGapUs = 12.0, 3.0, 5.0

// attentionSequence links the measured ops of one CUDA_EVENT attention row
// into the profiler's run (attnProfilerPasses passes from a sync) and sets
// each op's GPU backlog at its third pass under the shipped curves.
func attentionSequence(pts []realPoint) {
	if len(pts) == 0 {
		return
	}
	at := map[string]int{}
	for i, p := range pts {
		at[p.op.Name] = i
	}
	var seq []EventStep
	calls := make([][]int, len(pts))
	for pass := 0; pass < attnProfilerPasses; pass++ {
		idle := attnPassGapUs
		for _, name := range attnForward {
			if name == spec.OpAttnKVCacheSave || name == spec.OpAttnPrefill {
				idle += attnUntimedUs
			}
			i, ok := at[name]
			if !ok {
				idle += attnEmptyBlockUs
				continue
			}
			if pass == attnProfilerPasses/2 {
				calls[i] = append(calls[i], len(seq))
			}
			seq = append(seq, EventStep{Op: &pts[i].op, X: pts[i].x, IdleHostUs: idle})
			idle = 0
		}
		if idle > 0 && len(seq) > 0 {
			// Empty blocks at the end of a pass delay the next pass.
			seq = append(seq, EventStep{IdleHostUs: idle, Untimed: true})
		}
	}
	seq[0].Sync = true
	d, err := LookupDevice(pts[0].device)
	if err != nil || d.Curves.EventGapUs == 0 {
		return
	}
	_, busy := Roofline{Device: d, NCCL: true}.EventSequence(seq)
	for i := range pts {
		pts[i].seq, pts[i].calls = seq, calls[i]
		pts[i].busyUs = nil
		for _, c := range calls[i] {
			pts[i].busyUs = append(pts[i].busyUs, busy[c])
		}
	}
}
