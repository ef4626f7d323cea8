package cost

import (
	"math"

	"github.com/ftk-dev/ftk/runresult"
)

// opTable prices stage 0's ops at the mean decode step of the run so far
// (nil before any decode step). GPU times are the cost model's; the routed
// MoE ops (grouped GEMM, EP exchange) take the mean of the run's routing
// draws for that batch (routingModel.meanRatio). Issue times are eager
// ones, whatever the execution mode.
func (cm *OpCostModel) opTable() *runresult.OpTable {
	st := &cm.stages[0]
	if st.decodeSteps == 0 {
		return nil
	}
	n := max(1, int(math.Round(st.decodeSeqSum/float64(st.decodeSteps))))
	ctx := st.decodeCtxSum / float64(st.decodeSteps)
	t := &runresult.OpTable{DecodeSeqs: n, ContextTokens: int(math.Round(ctx))}
	idx := map[string]int{}
	row := func(name string) *runresult.OpTime {
		i, ok := idx[name]
		if !ok {
			i = len(t.Rows)
			idx[name] = i
			t.Rows = append(t.Rows, runresult.OpTime{Op: name})
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
