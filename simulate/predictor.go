package simulate

import "github.com/ftk-dev/ftk/spec"

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
	for _, k := range p.Keys() {
		if k.Measurement == spec.KernelOnly {
			return spec.KernelOnly
		}
	}
	return spec.CUDAEvent
}
