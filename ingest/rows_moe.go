package ingest

import (
	"fmt"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// Routing paths of MoE profiles (docs/formats.md).
const (
	routingStandard = "standard_fused_topk"
)

var moeExtras = []extraCol{
	{"num_experts", profilecsv.ColNumExperts, kindInt},
	{"router_topk", profilecsv.ColRouterTopk, kindInt},
	{"hidden_dim", profilecsv.ColHiddenDim, kindInt},
	{"expert_hidden_dim", profilecsv.ColExpertHiddenDim, kindInt},
	{"use_gated", profilecsv.ColUseGated, kindBool},
	{"gating_runtime_context", profilecsv.ColGatingRuntimeContext, kindString},
	{"gating_runtime_context_impl", profilecsv.ColGatingRuntimeContextImpl, kindString},
	{"routing_assignment_policy", profilecsv.ColRoutingAssignmentPolicy, kindString},
	{"routing_weight_policy", profilecsv.ColRoutingWeightPolicy, kindString},
	{"routing_uses_router_logits", profilecsv.ColRoutingUsesRouterLogits, kindBool},
	{"moe_grouped_gemm_backend", profilecsv.ColMoEGroupedGemmBackend, kindString},
	{"csv_num_tokens", profilecsv.ColNumTokens, kindInt},
	{"csv_total_routed_tokens", profilecsv.ColTotalRoutedTokens, kindFloat},
	{"tokens_per_expert_avg", profilecsv.ColTokensPerExpertAvg, kindFloat},
	{"min_load_ratio", profilecsv.ColMinLoadRatio, kindFloat},
	{"max_load_ratio", profilecsv.ColMaxLoadRatio, kindFloat},
	{"expert_utilization", profilecsv.ColExpertUtilization, kindFloat},
	{"load_imbalance_cv", profilecsv.ColLoadImbalanceCV, kindFloat},
	{"load_entropy", profilecsv.ColLoadEntropy, kindFloat},
	{"load_gini_coefficient", profilecsv.ColLoadGiniCoefficient, kindFloat},
	{"load_distribution", profilecsv.ColLoadDistribution, kindString},
	{"seed", profilecsv.ColSeed, kindInt},
	{"csv_max_expert_tokens", profilecsv.ColMaxExpertTokens, kindFloat},
	{"expert_tensor_parallel_size", profilecsv.ColExpertTensorParallelSize, kindInt},
	{"ep_rank", profilecsv.ColEPRank, kindInt},
	{"expert_token_counts", profilecsv.ColExpertTokenCounts, kindString},
}

// moeRows reads moe.csv (and the legacy dialect with moe_gating and
// moe_expert_* operators).
//
//   - moe_gating_linear, moe_gating_routing_topk: num_tokens, keyed by TP,
//     gating_runtime_context and routing_runtime_path.
//   - moe_shuffling: num_tokens, keyed by TP, EP, local experts and routing
//     path.
//   - moe_grouped_gemm: (total_routed_tokens, max_expert_tokens) with the
//     shuffling keys; max_expert_tokens is the column of that name (collect's
//     files), else round(tokens_per_expert_avg * max_load_ratio).
//
// Legacy files: moe_gating (gating linear and top-k timed together) becomes
// moe_gating_linear; moe_expert_* become moe_grouped_gemm (several parts
// are summed); a missing gating context is standalone_legacy, a missing
// routing path standard_fused_topk; without load columns the experts are
// taken as evenly loaded. Every such choice is written in the manifest.
func moeRows(r *reader) (rowFunc, error) {
	h := r.h
	if err := h.require(profilecsv.ColNumTokens, profilecsv.ColNumTensorParallelWorkers); err != nil {
		return nil, err
	}
	tokCol := r.use(profilecsv.ColNumTokens)
	tpCol := r.use(profilecsv.ColNumTensorParallelWorkers)
	parts := map[string][]statCols{}
	for _, op := range h.timeOps() {
		c, err := h.stats(op)
		if err != nil {
			return nil, err
		}
		r.useStats(c)
		to := op
		switch {
		case op == legacyMoEGating:
			to = spec.OpMoEGatingLinear
			r.in.Renamed = append(r.in.Renamed, dataset.Rename{From: op, To: to, Note: "legacy moe_gating timed the gating linear and the top-k together"})
		case strings.HasPrefix(op, legacyMoEExpertPrefix):
			to = spec.OpMoEGroupedGEMM
			r.in.Renamed = append(r.in.Renamed, dataset.Rename{From: op, To: to, Note: "legacy expert computation; parts summed when several"})
		case spec.OpFamily(op) != spec.FamilyMoE:
			return nil, fmt.Errorf("operator %q is not a MoE operator", op)
		}
		if len(parts[to]) > 0 && to != spec.OpMoEGroupedGEMM {
			return nil, fmt.Errorf("operator %s appears twice (as %s and %s)", to, parts[to][0].op, op)
		}
		parts[to] = append(parts[to], c)
	}
	_, hasShuffle := parts[spec.OpMoEShuffling]
	_, hasGEMM := parts[spec.OpMoEGroupedGEMM]

	epCol := r.use(profilecsv.ColExpertParallelSize)
	localCol := r.use(profilecsv.ColNumExpertsPerDevice)
	expertsCol := r.use(profilecsv.ColNumExperts)
	topkCol := r.use(profilecsv.ColRouterTopk)
	if (hasShuffle || hasGEMM) && localCol < 0 && expertsCol < 0 {
		return nil, fmt.Errorf("missing required column %q (or num_experts)", profilecsv.ColNumExpertsPerDevice)
	}
	if epCol < 0 && (hasShuffle || hasGEMM) {
		r.in.Notes = append(r.in.Notes, "no expert_parallel_size column: EP taken as 1")
	}
	maxExpCol := r.use(profilecsv.ColMaxExpertTokens) // collect's: the second feature itself
	rankCol := r.use(profilecsv.ColEPRank)
	routedCol := r.use(profilecsv.ColTotalRoutedTokens)
	avgCol := r.use(profilecsv.ColTokensPerExpertAvg)
	maxRatioCol := r.use(profilecsv.ColMaxLoadRatio)
	uniform := false
	if hasGEMM {
		switch n := btoi(routedCol >= 0) + btoi(avgCol >= 0) + btoi(maxRatioCol >= 0); {
		case n == 0 && topkCol >= 0:
			uniform = true
			r.in.Notes = append(r.in.Notes, "no load columns (total_routed_tokens, tokens_per_expert_avg, max_load_ratio): experts taken as evenly loaded, total_routed_tokens = num_tokens*router_topk/EP, max_expert_tokens = ceil(total_routed_tokens/local experts)")
		case n < 3:
			if err := h.require(profilecsv.ColTotalRoutedTokens, profilecsv.ColTokensPerExpertAvg, profilecsv.ColMaxLoadRatio); err != nil {
				return nil, err
			}
		}
	}
	ctxCol := r.use(profilecsv.ColGatingRuntimeContext)
	pathCol := r.use(profilecsv.ColRoutingRuntimePath)
	distCol := r.use(profilecsv.ColLoadDistribution)
	if ctxCol < 0 && (len(parts[spec.OpMoEGatingLinear]) > 0 || len(parts[spec.OpMoERoutingTopK]) > 0) {
		r.in.Notes = append(r.in.Notes, "no gating_runtime_context column: gating rows taken as "+spec.GatingStandalone)
	}
	if pathCol < 0 {
		r.in.Notes = append(r.in.Notes, "no routing_runtime_path column: taken as "+routingStandard)
	}

	order := []string{spec.OpMoEGatingLinear, spec.OpMoERoutingTopK, spec.OpMoEShuffling, spec.OpMoEGroupedGEMM}
	var ids [4]int32
	for i, op := range order {
		ids[i] = r.tab.idOf(op)
	}
	standalone, standard := r.tab.idOf(spec.GatingStandalone), r.tab.idOf(routingStandard)
	return func(r *reader) {
		tokens, ok := r.count(tokCol)
		if !ok {
			return
		}
		tp, ok := r.posInt(tpCol)
		if !ok {
			return
		}
		ep, local := 1, 0
		if hasShuffle || hasGEMM {
			if epCol >= 0 {
				if ep, ok = r.posInt(epCol); !ok {
					return
				}
			}
			if localCol >= 0 {
				local, ok = r.posInt(localCol)
			} else {
				var experts int
				if experts, ok = r.posInt(expertsCol); ok {
					local = max(1, experts/ep)
				}
			}
			if !ok {
				return
			}
		}
		gctx := r.cellID(ctxCol)
		if gctx == 0 {
			gctx = standalone
		}
		path := r.cellID(pathCol)
		if path == 0 {
			path = standard
		}
		cond := r.condID("ctx=", r.tab.strs[gctx], " dist=", r.str(distCol), " rank=", r.str(rankCol))
		for oi, op := range order {
			cols := parts[op]
			if len(cols) == 0 {
				continue
			}
			var st stat
			var res int
			if len(cols) == 1 {
				st, res = r.stats(cols[0], op)
			} else {
				st, res = r.sumStats(cols, op)
			}
			if res != statOK {
				continue
			}
			switch op {
			case spec.OpMoEGatingLinear, spec.OpMoERoutingTopK:
				r.emit(recKey{op: ids[oi], tp: int32(tp), gctx: gctx, rpath: path}, []float64{tokens}, st, varPure, phNone, 0)
			case spec.OpMoEShuffling:
				r.emit(recKey{op: ids[oi], tp: int32(tp), ep: int32(ep), local: int32(local), rpath: path}, []float64{tokens}, st, varPure, phNone, cond)
			case spec.OpMoEGroupedGEMM:
				var routed, maxExpert float64
				if uniform {
					topk, ok := r.posInt(topkCol)
					if !ok {
						return
					}
					routed = math.Round(tokens * float64(topk) / float64(ep))
					maxExpert = math.Ceil(routed / float64(local))
				} else {
					var avg, ratio float64
					routed, ok = r.num(routedCol)
					if ok {
						avg, ok = r.num(avgCol)
					}
					if ok {
						ratio, ok = r.num(maxRatioCol)
					}
					if !ok {
						return
					}
					maxExpert = math.Round(avg * ratio)
					if v, present, ok := r.optNum(maxExpCol); !ok {
						return
					} else if present {
						maxExpert = v
					}
				}
				r.emit(recKey{op: ids[oi], tp: int32(tp), ep: int32(ep), local: int32(local), rpath: path}, []float64{routed, maxExpert}, st, varPure, phNone, cond)
			}
		}
	}, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
