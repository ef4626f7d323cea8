package collect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Shape kinds: what one planned measurement is. A shape is one output row
// per measurement type; it may time several operators (all the linear ops
// of a layer at one token count, say), as the profile formats group them.
const (
	KindTokens       = "tokens"        // linear and MoE rows: a batch of num_tokens
	KindPrefill      = "prefill"       // one sequence: a chunk on top of a cached context
	KindDecode       = "decode"        // batch_size sequences of equal context, one token each
	KindMultiPrefill = "multi_prefill" // several prefill sequences, no context (token-wise ops up to the token budget)
	KindTrueMixed    = "true_mixed"    // prefill chunks and decodes in one batch
	KindSingleRoute  = "single_route"  // MoE: one token routed to one local expert
	KindCollective   = "collective"
	KindHost         = "host"
	// KindIssue shapes time the host issue costs (spec.IssueOps).
	KindIssue = "issue"
)

// Shape is one planned measurement: an operator family at one point of its
// features, for one parallel layout. ID is a stable hash of the parameters
// that decide the measurement; resume and sharding key on it.
type Shape struct {
	ID     string
	Family spec.Family
	Kind   string
	Layout spec.Layout
	// Ops are the operators timed for this shape, with their per-GPU shapes.
	Ops []spec.Op

	// Tokens is the number of new tokens in the batch (linear, MoE,
	// attention) or, for collectives, the tokens whose activations move.
	Tokens int

	// Attention: new tokens and cached context of each prefill sequence,
	// and the context of each decoding sequence.
	PrefillChunks, PrefillContexts, DecodeContexts []int

	// MoE: the routing that produced the load and the tokens of each
	// local expert of the measured (most loaded) EP rank.
	Distribution  string
	LoadSeed      uint64
	GatingContext string
	RoutingPath   string
	Load          ExpertLoad

	// Collectives.
	Collective string
	Workers    int
	SizeBytes  int64

	// Host: the batch composition of one engine step.
	BatchSize, PrefillTokens, DecodeTokens int
}

// key is the canonical text of the parameters that identify a shape.
func (s *Shape) key() string {
	var b strings.Builder
	l := s.Layout.Normalize()
	fmt.Fprintf(&b, "%s|%s|tp=%d|ep=%d|dp=%d|pp=%d|t=%d", s.Family, s.Kind, l.TP, l.EP, l.DP, l.PP, s.Tokens)
	if len(s.PrefillChunks)+len(s.DecodeContexts) > 0 {
		fmt.Fprintf(&b, "|pc=%v|pk=%v|dk=%v", s.PrefillChunks, s.PrefillContexts, s.DecodeContexts)
	}
	if s.Distribution != "" {
		fmt.Fprintf(&b, "|dist=%s|seed=%d|ctx=%s|path=%s", s.Distribution, s.LoadSeed, s.GatingContext, s.RoutingPath)
	}
	if s.Collective != "" {
		fmt.Fprintf(&b, "|coll=%s|w=%d|size=%d", s.Collective, s.Workers, s.SizeBytes)
		if o := s.Op(s.Collective); o != nil && o.Backend != "" {
			fmt.Fprintf(&b, "|backend=%s|dp=%d", o.Backend, o.DPRanks)
		}
	}
	if s.Kind == KindHost || s.Kind == KindIssue {
		fmt.Fprintf(&b, "|b=%d|p=%d|d=%d", s.BatchSize, s.PrefillTokens, s.DecodeTokens)
	}
	return b.String()
}

// setID derives the shape's ID from its parameters: 16 hex digits of the
// SHA-256 of the canonical key.
func (s *Shape) setID() {
	h := sha256.Sum256([]byte(s.key()))
	s.ID = hex.EncodeToString(h[:8])
}

// Op returns the shape's operator named name, or nil.
func (s *Shape) Op(name string) *spec.Op {
	for i := range s.Ops {
		if s.Ops[i].Name == name {
			return &s.Ops[i]
		}
	}
	return nil
}

// Features returns the predictor features of operator o in this shape, in
// spec.OpFeatures order: what a predictor trained on the row will see, and
// what the synthetic backend feeds the roofline model. Batches of several
// attention sequences are reduced with spec.PrefillEquivalent and
// spec.DecodeEquivalent.
func (s *Shape) Features(o *spec.Op) []float64 {
	switch o.Name {
	case spec.OpAttnPrefill:
		kv, chunk := spec.PrefillEquivalent(s.PrefillChunks, s.PrefillContexts)
		return []float64{kv, chunk}
	case spec.OpAttnDecode:
		b, kv := spec.DecodeEquivalent(s.DecodeContexts)
		return []float64{b, kv}
	case spec.OpMoEGroupedGEMM:
		return []float64{float64(s.Load.Routed()), float64(s.Load.MaxExpert())}
	case spec.OpAllReduce, spec.OpSendRecv, spec.OpEPDispatch, spec.OpEPCombine:
		return []float64{float64(s.SizeBytes)}
	}
	if o.Family == spec.FamilyCPU {
		return []float64{float64(s.BatchSize), float64(s.PrefillTokens), float64(s.DecodeTokens)}
	}
	return []float64{float64(s.Tokens)}
}
