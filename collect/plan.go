package collect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Routing paths of the MoE router (the routing_runtime_path column).
const (
	// RoutingStandard is vLLM's fused top-k over real router logits: the
	// path a served model runs.
	RoutingStandard = spec.RoutingPathStandard
	// RoutingUniform assigns experts round-robin with weights 1/k, skipping
	// the softmax over router logits.
	RoutingUniform = spec.RoutingPathUniform
)

// Families lists the operator families in plan order.
var Families = []spec.Family{spec.FamilyLinear, spec.FamilyAttention, spec.FamilyMoE, spec.FamilyCollective, spec.FamilyCPU}

// familyNames maps command-line family names to families.
var familyNames = map[string]spec.Family{
	"linear": spec.FamilyLinear, "attention": spec.FamilyAttention, "moe": spec.FamilyMoE,
	"collectives": spec.FamilyCollective, "host": spec.FamilyCPU,
}

// ParseFamilies resolves command-line family names (linear, attention,
// moe, collectives, host, all) to families in plan order.
func ParseFamilies(names []string) ([]spec.Family, error) {
	want := map[spec.Family]bool{}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "all" {
			for _, f := range Families {
				want[f] = true
			}
			continue
		}
		f, ok := familyNames[n]
		if !ok {
			return nil, fmt.Errorf("unknown family %q: want linear, attention, moe, collectives, host or all", n)
		}
		want[f] = true
	}
	var out []spec.Family
	for _, f := range Families {
		if want[f] {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no family given: want linear, attention, moe, collectives, host or all")
	}
	return out, nil
}

// FamilyName is the command-line name of a family.
func FamilyName(f spec.Family) string {
	for n, g := range familyNames {
		if g == f {
			return n
		}
	}
	return string(f)
}

// PlanConfig says what a sweep covers.
type PlanConfig struct {
	Model    *spec.Model
	Layouts  []spec.Layout
	Limits   spec.EngineLimits
	Families []spec.Family
	// MoE: gating contexts (spec.GatingPrefillHot, spec.GatingStandalone),
	// routing paths and load distributions to sample.
	GatingContexts []string
	RoutingPaths   []string
	Distributions  []string
	// Seed seeds the MoE routing draws.
	Seed uint64
	// All2AllBackend is the EP dispatch and combine to measure on
	// data-parallel layouts (vLLM's names, spec.All2AllBackends; empty:
	// allgather_reducescatter, vLLM's default from v0.11). The torch
	// worker runs the torch.distributed collectives of the gathering
	// backends, and all_to_all_single as the stand-in of the all-to-all
	// kernel backends (pplx, DeepEP), whose kernels it does not call; the
	// impl column says which.
	All2AllBackend string
}

// Plan is a sweep's ordered list of shapes. The order and every ID depend
// only on the configuration.
type Plan struct {
	Config PlanConfig
	Shapes []Shape
}

// NewPlan derives the shapes of a sweep from the model, the layouts and
// the engine limits: the same query domain fit --check-coverage checks
// (spec.QueryDomain), sampled on the grids of grid.go.
func NewPlan(c PlanConfig) (*Plan, error) {
	if c.Model == nil {
		return nil, fmt.Errorf("plan: no model")
	}
	var err error
	if c.Limits, err = c.Limits.Resolve(c.Model); err != nil {
		return nil, err
	}
	if c.All2AllBackend != "" && !slices.Contains(spec.All2AllBackends(), c.All2AllBackend) {
		return nil, fmt.Errorf("plan: unknown all2all backend %q: use one of %v", c.All2AllBackend, spec.All2AllBackends())
	}
	if len(c.Layouts) == 0 {
		c.Layouts = []spec.Layout{{TP: 1}}
	}
	for i, l := range c.Layouts {
		if err := l.Validate(c.Model); err != nil {
			return nil, err
		}
		c.Layouts[i] = l.Normalize()
	}
	for _, d := range c.Distributions {
		if _, err := zipfExponent(d); err != nil {
			return nil, err
		}
	}
	for _, g := range c.GatingContexts {
		if g != spec.GatingPrefillHot && g != spec.GatingStandalone {
			return nil, fmt.Errorf("unknown gating context %q (want %s or %s)", g, spec.GatingPrefillHot, spec.GatingStandalone)
		}
	}
	for _, r := range c.RoutingPaths {
		if r != RoutingStandard && r != RoutingUniform {
			return nil, fmt.Errorf("unknown routing path %q (want %s or %s)", r, RoutingStandard, RoutingUniform)
		}
	}
	p := &Plan{Config: c}
	pl := planner{PlanConfig: c, routes: map[string][]int{}}
	for _, f := range c.Families {
		var shapes []Shape
		var err error
		switch f {
		case spec.FamilyLinear:
			shapes = pl.linear()
		case spec.FamilyAttention:
			shapes = pl.attention()
		case spec.FamilyMoE:
			shapes, err = pl.moe()
		case spec.FamilyCollective:
			shapes = pl.collectives()
		case spec.FamilyCPU:
			shapes = pl.host()
		default:
			err = fmt.Errorf("plan: unknown family %q", f)
		}
		if err != nil {
			return nil, err
		}
		for i := range shapes {
			shapes[i].setID()
		}
		p.Shapes = append(p.Shapes, shapes...)
	}
	seen := make(map[string]string, len(p.Shapes))
	for _, s := range p.Shapes {
		if k, dup := seen[s.ID]; dup {
			return nil, fmt.Errorf("plan: shapes %q and %q share ID %s", k, s.key(), s.ID)
		}
		seen[s.ID] = s.key()
	}
	return p, nil
}

// Count returns the number of shapes of family f.
func (p *Plan) Count(f spec.Family) int {
	n := 0
	for i := range p.Shapes {
		if p.Shapes[i].Family == f {
			n++
		}
	}
	return n
}

// FamilyChecksum identifies the family's part of the plan: the SHA-256 of
// its shape IDs in order (16 hex digits). Shards of one plan agree on it.
func (p *Plan) FamilyChecksum(f spec.Family) string {
	h := sha256.New()
	for i := range p.Shapes {
		if p.Shapes[i].Family == f {
			h.Write([]byte(p.Shapes[i].ID))
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Shard is a deterministic slice of a plan: the shapes whose position in
// the plan is Index modulo Count.
type Shard struct{ Index, Count int }

// ParseShard reads "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// IsAll reports whether the shard is the whole plan.
func (s Shard) IsAll() bool { return s.Count <= 1 }

// String renders the shard as --shard takes it.
func (s Shard) String() string {
	if s.IsAll() {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Take returns the shard's shapes, in plan order.
func (s Shard) Take(shapes []Shape) []Shape {
	if s.IsAll() {
		return shapes
	}
	var out []Shape
	for i := s.Index; i < len(shapes); i += s.Count {
		out = append(out, shapes[i])
	}
	return out
}
