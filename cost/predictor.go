package cost

import (
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// OpPredictor predicts one operator's time in milliseconds from its
// features, in spec.OpFeatures order. A fit bundle's predictor is one.
type OpPredictor interface {
	PredictMs(x []float64) float64
}

// extrapolationCounter is implemented by predictors that count the queries
// they answered outside their sampled domain (fit's predictors do).
type extrapolationCounter interface {
	Extrapolated() int64
}

// PredictorSet is a model bundle as the simulator sees it.
type PredictorSet interface {
	// Predictor returns the predictor of key k, if the bundle has one.
	Predictor(k spec.OpKey) (OpPredictor, bool)
	// Keys lists the bundle's predictors.
	Keys() []spec.OpKey
}

// opKey is the predictor key the simulator asks for op on layout l, built
// as spec.QueryDomain builds the keys it samples: every op keyed by the
// layout's TP, MoE gating by the prefill_hot context, MoE expert ops by EP
// and local experts, collectives by group size; send/recv is a two-GPU
// transfer keyed TP=1.
func opKey(o *spec.Op, l spec.Layout, measurement string) spec.OpKey {
	k := spec.OpKey{Op: o.Name, Measurement: measurement, TP: l.TP}
	switch o.Name {
	case spec.OpMoEGatingLinear, spec.OpMoERoutingTopK:
		k.GatingContext = spec.GatingPrefillHot
	case spec.OpMoEShuffling, spec.OpMoEGroupedGEMM:
		k.EP, k.LocalExperts = l.EP, o.LocalExperts
	case spec.OpAllReduce, spec.OpEPDispatch, spec.OpEPCombine:
		k.Workers = o.Workers
	case spec.OpSendRecv:
		k.TP, k.Workers = 1, 2
	}
	return k
}

// bundleMeasurement picks the measurement type a simulation uses from a
// bundle: KERNEL_ONLY when the bundle has any such predictor (the launch
// term is then added explicitly), else CUDA_EVENT (launch gaps included in
// each operator's time). The two are never mixed within a run.
func bundleMeasurement(p PredictorSet) string {
	if m, ok := p.(measuredAs); ok {
		return m.Measurement()
	}
	for _, k := range p.Keys() {
		if k.Measurement == spec.KernelOnly {
			return spec.KernelOnly
		}
	}
	return spec.CUDAEvent
}

// routingStandardPath is the routing runtime path of vLLM's fused top-k.
const routingStandardPath = "standard_fused_topk"

// resolvePredictor returns the predictor answering key k and the key it
// was found under: k itself or, for MoE ops, a key that agrees with k
// wherever k is set. Conditions k leaves zero or empty are open, as fit's
// coverage check reads them: the routing runtime path, which the simulator
// does not fix (profiles record standard_fused_topk, vLLM's fused top-k,
// or uniform_topk, a synthetic uniform router), and the local experts of
// shuffling, which spec's query domain leaves unset. Among several,
// standard_fused_topk is preferred, then the first key in sort order. The
// gating context is always set, never open.
func resolvePredictor(set PredictorSet, k spec.OpKey) (OpPredictor, spec.OpKey, bool) {
	if p, ok := set.Predictor(k); ok {
		return p, k, true
	}
	if spec.OpFamily(k.Op) != spec.FamilyMoE {
		return nil, k, false
	}
	var cands []spec.OpKey
	for _, h := range set.Keys() {
		switch {
		case h.Op != k.Op, h.Measurement != k.Measurement, h.TP != k.TP, h.GatingContext != k.GatingContext,
			k.EP != 0 && h.EP != k.EP, k.LocalExperts != 0 && h.LocalExperts != k.LocalExperts,
			k.RoutingPath != "" && h.RoutingPath != k.RoutingPath, k.Workers != 0 && h.Workers != k.Workers:
			continue
		}
		cands = append(cands, h)
	}
	if len(cands) == 0 {
		return nil, k, false
	}
	slices.SortFunc(cands, func(a, b spec.OpKey) int {
		if sa, sb := a.RoutingPath == routingStandardPath, b.RoutingPath == routingStandardPath; sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		return strings.Compare(a.String(), b.String())
	})
	p, ok := set.Predictor(cands[0])
	return p, cands[0], ok
}
