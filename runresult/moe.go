package runresult

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// MoE routing modes (MoEConfig.Routing).
const (
	// RoutingUniform: every token picks its top-k experts uniformly at
	// random (distinct).
	RoutingUniform = "uniform"
	// RoutingSkewed: expert popularity follows a Zipf law of exponent
	// MoEConfig.Skew over a random order of the experts, as collect's
	// "skewed" load distribution. The default, at DefaultRoutingSkew.
	RoutingSkewed = "skewed"
	// RoutingReplay: each MoE layer's expert popularity is its share of
	// tokens in a measured per-layer histogram (MoEConfig.Histogram).
	RoutingReplay = "replay"
	// RoutingEven: every expert gets exactly its share, tokens x top-k /
	// experts (no draw): the even-load assumption of the anchors.
	RoutingEven = "even"
)

// The defaults: collect's "skewed" exponent when skewed routing is asked
// for without one, and vLLM's all2all backend from v0.11
// (MoEConfig.All2AllBackend; the backends are spec.All2AllBackends).
const (
	defaultMoESkew       = 1.0
	defaultAll2AllMethod = spec.All2AllAllgatherRS
)

// DefaultRoutingSkew is the Zipf exponent of the default routing. A guess:
// no published per-layer routing statistics of Qwen3-30B-A3B (expert
// histograms, distinct experts per batch) were found. It is anchored on
// the one public rank-level figure found: vLLM PR #50647 ("[Kimi K3] Add
// EPLB support", 2026; GSM8K on 16 EP ranks, EPLB off): the most loaded
// rank carries a median 1.069x the mean rank load over EPLB's observation
// windows. Successive sampling of top-8 of 128 experts at Zipf exponent s,
// placed at random on 16 ranks, gives a long-run max/mean rank load of
// 1.07 at s = 0.10 and 1.15 at s = 0.2 (TestDefaultSkewAnchor); the
// windows sum layers, which averages per-layer skew out, so per-layer
// skew is at least that: 0.2. Measured histograms (routing replay)
// replace it.
const DefaultRoutingSkew = 0.2

// MoEConfig says how MoE layers route tokens and move them between EP
// ranks.
type MoEConfig struct {
	// Routing is RoutingSkewed (default, at DefaultRoutingSkew),
	// RoutingUniform, RoutingReplay or RoutingEven.
	Routing string `json:"routing" yaml:"routing"`
	// Skew is the Zipf exponent of skewed routing (0: DefaultRoutingSkew,
	// whether skewed routing is named or taken by default).
	Skew float64 `json:"skew,omitempty" yaml:"skew,omitempty"`
	// Histogram is the per-layer expert histogram replay routing reads
	// (CSV: layer,expert,tokens; see ReadExpertHistogram).
	Histogram string `json:"histogram,omitempty" yaml:"histogram,omitempty"`
	// All2AllBackend names the EP dispatch and combine of a data-parallel
	// layout (vLLM's --all2all-backend): allgather_reducescatter (the
	// default from vLLM v0.11, ParallelConfig.all2all_backend) or naive
	// (the default of VLLM_ALL2ALL_BACKEND up to v0.10), or the all-to-all
	// backends pplx, deepep_high_throughput, deepep_low_latency. At DP=1
	// vLLM exchanges nothing and the backend is unused (spec.MoEExchanges).
	All2AllBackend string `json:"all2all_backend" yaml:"all2all_backend"`
	// Seed seeds the routing draws.
	Seed uint64 `json:"seed" yaml:"seed"`
}

// Resolve fills in the defaults.
func (c *MoEConfig) Resolve() {
	if c.Routing == "" {
		c.Routing = RoutingSkewed
	}
	if c.Routing == RoutingSkewed && c.Skew == 0 {
		// One default whether skewed routing is named or not (naming it
		// once changed the exponent from 0.2 to 1); the summary prints it.
		c.Skew = DefaultRoutingSkew
	}
	if c.All2AllBackend == "" {
		c.All2AllBackend = defaultAll2AllMethod
	}
}

// Validate checks the MoE section of a run config.
func (c *MoEConfig) Validate() error {
	bad := func(format string, a ...any) error { return fmt.Errorf("simulate config: moe: "+format, a...) }
	switch c.Routing {
	case "", RoutingUniform, RoutingEven:
	case RoutingSkewed:
	case RoutingReplay:
		if c.Histogram == "" {
			return bad("routing replay needs a histogram file (moe.histogram, --moe-histogram)")
		}
	default:
		return bad("unknown routing %q: use %s, %s, %s or %s", c.Routing, RoutingUniform, RoutingSkewed, RoutingReplay, RoutingEven)
	}
	if c.Histogram != "" && c.Routing != RoutingReplay {
		return bad("a histogram (%s) is only read by routing %s, not %q", c.Histogram, RoutingReplay, c.Routing)
	}
	if c.Skew < 0 || math.IsNaN(c.Skew) || math.IsInf(c.Skew, 0) || (c.Skew != 0 && c.Routing != RoutingSkewed && c.Routing != "") {
		return bad("skew %g: must be a non-negative Zipf exponent, and only with routing %s", c.Skew, RoutingSkewed)
	}
	switch c.All2AllBackend {
	case "", spec.All2AllNaive, spec.All2AllAllgatherRS, spec.All2AllPPLX, spec.All2AllDeepEPHT, spec.All2AllDeepEPLL:
	default:
		return bad("unknown all2all_backend %q: use %s, %s, %s, %s or %s", c.All2AllBackend,
			spec.All2AllNaive, spec.All2AllAllgatherRS, spec.All2AllPPLX, spec.All2AllDeepEPHT, spec.All2AllDeepEPLL)
	}
	return nil
}
