package cost

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// OpTime is one operator's share of a representative step on stage 0: how
// often the step runs it, the host time to issue those runs eagerly and
// the GPU time they take.
type OpTime struct {
	Op      string  `json:"op"`
	Runs    float64 `json:"runs"`
	IssueMs float64 `json:"issue_ms"`
	GPUMs   float64 `json:"gpu_ms"`
}

// OpTable is the per-op CPU (issue) and GPU time of the run's mean decode
// step on stage 0.
type OpTable struct {
	// DecodeSeqs and ContextTokens describe the step: the mean decode batch
	// and mean context of the stage's decode steps.
	DecodeSeqs    int      `json:"decode_seqs"`
	ContextTokens int      `json:"context_tokens"`
	Rows          []OpTime `json:"rows"`
}

// opTable prices stage 0's ops at the mean decode step of the run so far
// (nil before any decode step). GPU times are the cost model's; the routed
// MoE ops (grouped GEMM, EP exchange) take the mean of the run's routing
// draws for that batch (routingModel.meanRatio). Issue times are eager
// ones, whatever the execution mode.
func (cm *OpCostModel) opTable() *OpTable {
	st := &cm.stages[0]
	if st.decodeSteps == 0 {
		return nil
	}
	n := max(1, int(math.Round(st.decodeSeqSum/float64(st.decodeSteps))))
	ctx := st.decodeCtxSum / float64(st.decodeSteps)
	t := &OpTable{DecodeSeqs: n, ContextTokens: int(math.Round(ctx))}
	idx := map[string]int{}
	row := func(name string) *OpTime {
		i, ok := idx[name]
		if !ok {
			i = len(t.Rows)
			idx[name] = i
			t.Rows = append(t.Rows, OpTime{Op: name})
		}
		return &t.Rows[i]
	}
	for _, g := range []*opGroup{&st.tokens, &st.seqs, &st.decode, &st.routed} {
		for i := range g.ops {
			p := &g.ops[i]
			var x []float64
			if g == &st.decode {
				x = []float64{float64(n), ctx}
			} else {
				x = cm.tokenFeatures(p, n)
			}
			ms, _ := cm.price(p, x)
			if g == &st.routed && cm.routing != nil && len(st.routers) > 0 {
				ms *= cm.routing.meanRatio(st.routers[0], n, p.comp == CompMoE)
			}
			r := row(p.op.Name)
			r.Runs += p.count
			r.GPUMs += ms * p.count
		}
	}
	for _, o := range cm.issue.stages[0].byOp {
		if o.onlyWith == "prefill" {
			continue
		}
		row(o.name).IssueMs += o.alwaysMs
	}
	return t
}

// WriteOpTable prints an op table (the breakdown of a run summary).
func WriteOpTable(w io.Writer, role string, t *OpTable) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "per op, %s stage 0, mean decode step (%d seqs, %d context tokens)\t runs\tissue ms\t  GPU ms\n", role, t.DecodeSeqs, t.ContextTokens)
	var issue, gpu float64
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "  %s\t%5.0f\t%8.3f\t%8.3f\n", r.Op, r.Runs, r.IssueMs, r.GPUMs)
		issue += r.IssueMs
		gpu += r.GPUMs
	}
	fmt.Fprintf(tw, "  total (issue eager; host-bound when issue > GPU)\t\t%8.3f\t%8.3f\n", issue, gpu)
	return tw.Flush()
}
