package cost

import (
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// issueModel prices the CPU timeline of a forward pass (docs/design.md section 2):
// what the host spends issuing each stage's ops, from roofline's inventory of
// what vLLM issues (roofline.IssueOf) and per-kind costs (measured by collect
// host, calibrated, or roofline's defaults). Everything that does not depend
// on the batch is summed once per run: a step costs a few additions.
//
// What each measurement type already holds, so nothing counts twice: a
// KERNEL_ONLY op time is GPU time only, and the CPU timeline adds every
// issue cost; a CUDA_EVENT op time spans the op's own kernels and the gaps
// between them (its launches when they outran the GPU), never the Python
// between ops: it is the op's GPU-timeline length, and the timelines'
// max() keeps its launches from being counted again while the module and
// dispatcher Python between ops still shows when it is slower. The
// roofline's CUDA_EVENT times are built the same way (roofline.Roofline).
type issueModel struct {
	costs  spec.IssueCosts
	stages []stageIssue
}

// stageIssue is one stage's issue time, milliseconds, by when it is paid.
type stageIssue struct {
	layers int
	// opsPerLayer is the mean number of ops of a layer.
	opsPerLayer int
	// Eager, per layer on average: ops every step runs, ops only prefill
	// (MLA's up-projection) or only decode (MLA's absorbed bmm) batches run,
	// and the layer's first op.
	always, prefill, decode, first float64
	// Piecewise CUDA graphs leave the attention ops eager, per layer.
	attnAlways, attnPrefill, attnDecode float64
	// prologue (embedding, activation receive) and epilogue (LM head,
	// activation send).
	prologue, epilogue float64
	// recv and send are the eager issue of the activations' receive and
	// send (in prologue and epilogue): Worker.execute_model runs them
	// outside the model, so CUDA graphs never hold them.
	recv, send float64
	// byOp is the eager issue time per step of each op name on the stage,
	// in first-seen order, for the breakdown.
	byOp []opIssueTime
}

// opIssueTime is one op's eager issue time per step on a stage.
type opIssueTime struct {
	name            string
	alwaysMs, preMs float64 // every step; prefill-only / decode-only extra
	onlyWith        string  // "" (every step), "prefill" or "decode"
}

func newIssueModel(m *spec.Model, l spec.Layout, costs spec.IssueCosts) *issueModel {
	im := &issueModel{costs: costs}
	first, last, between := spec.ModelOps(m, l)
	for s := 0; s < l.PP; s++ {
		var st stageIssue
		lo, hi := l.StageLayers(m, s)
		st.layers = hi - lo
		ops := 0
		for i := lo; i < hi; i++ {
			for j, o := range spec.LayerOps(m, l, i) {
				ms := costs.OpUs(roofline.IssueOf(m, l, &o)) / 1e3
				attn := o.Family == spec.FamilyAttention
				switch o.Name {
				case spec.OpAttnPrefill:
					st.prefill += ms
					st.attnPrefill += ms
					st.addOp(o.Name, ms, "prefill")
				case spec.OpAttnDecode:
					st.decode += ms
					st.attnDecode += ms
					st.addOp(o.Name, ms, "decode")
				default:
					st.always += ms
					if attn {
						st.attnAlways += ms
					}
					st.addOp(o.Name, ms, "")
				}
				if j == 0 {
					st.first += ms
				}
				ops++
			}
		}
		if s == 0 {
			for _, o := range first {
				ms := costs.OpUs(roofline.IssueOf(m, l, &o)) / 1e3
				st.prologue += ms
				st.addOp(o.Name, ms, "")
			}
		} else if between != nil {
			// The activations from the stage before (roofline.PPRecvIssue).
			ms := costs.OpUs(roofline.PPRecvIssue(l)) / 1e3
			st.prologue += ms
			st.recv = ms
			st.addOp(between.Name, ms, "")
		}
		tail := last
		if s != l.PP-1 {
			tail = nil
			if between != nil {
				tail = []spec.Op{*between}
			}
		}
		for _, o := range tail {
			ms := costs.OpUs(roofline.IssueOf(m, l, &o)) / 1e3
			st.epilogue += ms
			if o.Name == spec.OpSendRecv {
				st.send = ms
			}
			st.addOp(o.Name, ms, "")
		}
		if n := float64(max(st.layers, 1)); st.layers > 0 {
			st.always /= n
			st.prefill /= n
			st.decode /= n
			st.first /= n
			st.attnAlways /= n
			st.attnPrefill /= n
			st.attnDecode /= n
			st.opsPerLayer = ops / st.layers
		}
		im.stages = append(im.stages, st)
	}
	return im
}

func (st *stageIssue) addOp(name string, ms float64, only string) {
	for i := range st.byOp {
		if st.byOp[i].name == name && st.byOp[i].onlyWith == only {
			st.byOp[i].alwaysMs += ms
			return
		}
	}
	st.byOp = append(st.byOp, opIssueTime{name: name, alwaysMs: ms, onlyWith: only})
}

// forward returns the CPU issue time and the end of the two timelines of
// a forward pass on stage s in execution mode mode, for a batch with or
// without prefill and decode sequences, whose device time is deviceMs of
// which epilogueGPUMs is the LM head's.
func (im *issueModel) forward(s int, mode string, hasPrefill, hasDecode bool, deviceMs, epilogueGPUMs float64) (cpuMs, endMs float64) {
	st := &im.stages[s]
	if mode == runresult.ExecCUDAGraph {
		// One replay of the whole forward: one launch, then the GPU; the
		// activations' receive and send stay eager.
		c := im.costs.GraphLaunchUs/1e3 + st.recv + st.send
		return c, c + deviceMs
	}
	var layerCPU, pro, epi, first float64
	switch mode {
	case runresult.ExecPiecewise:
		// Every layer is one captured piece plus its eager attention; one
		// more piece closes the stage (final norm, LM head).
		piece := im.costs.PieceLaunchUs / 1e3
		layerCPU, pro, epi, first = piece+st.attnAlways, st.recv, piece+st.send, piece
		if hasPrefill {
			layerCPU += st.attnPrefill
		}
		if hasDecode {
			layerCPU += st.attnDecode
		}
	default:
		layerCPU, pro, epi, first = st.always, st.prologue, st.epilogue, st.first
		if hasPrefill {
			layerCPU += st.prefill
		}
		if hasDecode {
			layerCPU += st.decode
		}
	}
	if st.layers == 0 {
		sp := opSpan(pro+epi, deviceMs)
		return sp.cpu, sp.end
	}
	layerGPU := max(0, deviceMs-epilogueGPUMs) / float64(st.layers)
	sp := opSpan(pro, 0).
		then(layerSpan(layerCPU, layerGPU, first, st.opsPerLayer).repeat(st.layers)).
		then(opSpan(epi, epilogueGPUMs))
	return sp.cpu, sp.end
}
