package spec

import "fmt"

// OpKey names one predictor: an operator measured one way under one set of
// conditions that change its cost but are not features.
type OpKey struct {
	Op          string `json:"op"`
	Measurement string `json:"measurement_type"`
	TP          int    `json:"tp"`
	// EP and LocalExperts key MoE operators (experts held by one rank).
	EP           int `json:"ep,omitempty"`
	LocalExperts int `json:"local_experts,omitempty"`
	// GatingContext keys MoE gating ops (prefill_hot or standalone_legacy);
	// RoutingPath keys MoE routing ops.
	GatingContext string `json:"gating_context,omitempty"`
	RoutingPath   string `json:"routing_path,omitempty"`
	// Workers keys collectives (group size).
	Workers int `json:"workers,omitempty"`
	// CrossNode keys collectives whose group spans nodes (one device per
	// node): inter-node links, several times slower than intra-node ones.
	CrossNode bool `json:"cross_node,omitempty"`
}

func (k OpKey) String() string {
	s := fmt.Sprintf("%s[%s tp=%d", k.Op, k.Measurement, k.TP)
	if k.EP > 0 {
		s += fmt.Sprintf(" ep=%d experts=%d", k.EP, k.LocalExperts)
	}
	if k.GatingContext != "" {
		s += " ctx=" + k.GatingContext
	}
	if k.RoutingPath != "" {
		s += " routing=" + k.RoutingPath
	}
	if k.Workers > 0 {
		s += fmt.Sprintf(" workers=%d", k.Workers)
	}
	if k.CrossNode {
		s += " cross-node"
	}
	return s + "]"
}
