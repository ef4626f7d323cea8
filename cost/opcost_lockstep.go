package cost

import (
	"github.com/ftk-dev/ftk/spec"

	"github.com/ftk-dev/ftk/runresult"
)

// LockstepCost implements LockstepCostModel for a data-parallel MoE layout
// (one pipeline stage). Every rank runs its batch padded to the largest
// rank's token count (vLLM's DP padding; none when eager, where a dummy
// batch is one token), attention over its own sequences, and a full CUDA
// graph only when no rank prefills (the ranks agree on the lowest mode).
// The MoE layers' grouped GEMM, dispatch and combine are priced once for
// the tokens of every rank together: with even routing at the group's
// token count, otherwise from the routing draws (moe_tables.go) over the
// whole EP group, so the slowest EP rank sets them for all.
func (cm *OpCostModel) LockstepCost(b []*BatchShape, c []StepCost) {
	pad, graphable := 0, true
	for _, s := range b {
		pad = max(pad, s.Tokens)
		graphable = graphable && len(s.PrefillChunks) == 0
	}
	group := 0
	for _, s := range b {
		group += cm.lockstepTokens(s.Tokens, pad)
	}
	st := &cm.stages[0]
	var routed StepCost
	cm.routedAt(st, group, &routed)
	for r, s := range b {
		cm.stageCost(s, 0, cm.lockstepTokens(s.Tokens, pad), graphable, &routed, &c[r])
	}
}

// lockstepTokens is the tokens a rank with tokens of its own runs in a
// lockstep step whose largest rank has pad.
func (cm *OpCostModel) lockstepTokens(tokens, pad int) int {
	if cm.exec != runresult.ExecEager {
		return pad
	}
	return max(tokens, 1)
}

// routedAt adds the routed MoE ops of stage st for a step routing tokens
// tokens: the routing draws, or the even load when routing is even.
func (cm *OpCostModel) routedAt(st *stageModel, tokens int, c *StepCost) {
	if len(st.routed.ops) == 0 {
		return
	}
	if cm.routing != nil && len(st.routers) > 0 {
		cm.routedCost(st, tokens, c)
		return
	}
	e := cm.memo(&st.routed, st.routedByTokens, tokens)
	c.Ms[CompMoE] += e.ms[CompMoE]
	c.Ms[CompEPComm] += e.ms[CompEPComm]
	if e.extrap != 0 {
		st.routed.countExtrap(e.extrap)
	}
	c.Kernels += st.routed.kernels
}

// exchangeBytes is the size_bytes of EP dispatch or combine (op) for a
// lockstep step of groupTokens tokens whose most loaded EP rank receives
// recvCopies routed copies (spec.EPExchange).
func (cm *OpCostModel) exchangeBytes(op string, groupTokens, recvCopies int) float64 {
	x := cm.exchange
	x.GroupTokens, x.RecvCopies = groupTokens, recvCopies
	if op == spec.OpEPCombine {
		return x.CombineBytes()
	}
	return x.DispatchBytes()
}
