package collect

import (
	"slices"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// The plan samples every predictor's query domain edge to edge, for dense,
// MoE and MLA models, several layouts and engine limits.
func TestPlanCoversQueryDomain(t *testing.T) {
	for _, tc := range []struct {
		model   string
		layouts []spec.Layout
		lim     spec.EngineLimits
	}{
		{"qwen3-30b-a3b", []spec.Layout{{TP: 8, EP: 8}}, defaultLimits},
		{"qwen3-30b-a3b", []spec.Layout{{TP: 1}, {TP: 2, EP: 2}, {TP: 4, EP: 8, DP: 2}}, defaultLimits},
		{"llama-3.1-8b", []spec.Layout{{TP: 1}, {TP: 2, PP: 2}}, defaultLimits},
		{"mixtral-8x7b", []spec.Layout{{TP: 2, EP: 2}}, spec.EngineLimits{MaxNumBatchedTokens: 2048, MaxNumSeqs: 512, MaxModelLen: 32768, BlockSize: spec.DefaultBlockSize}},
		{"deepseek-v3", []spec.Layout{{TP: 8, EP: 8}}, defaultLimits},
		{"phi-tiny-moe", []spec.Layout{{TP: 1}}, spec.EngineLimits{MaxNumBatchedTokens: 512, MaxNumSeqs: 1, MaxModelLen: 2, BlockSize: spec.DefaultBlockSize}},
	} {
		m := mustModel(t, tc.model)
		p, err := NewPlan(planConfig(m, tc.lim, tc.layouts))
		if err != nil {
			t.Fatalf("%s %v: %v", tc.model, tc.layouts, err)
		}
		for _, g := range CheckCoverage(p.Shapes, m, p.Config.Layouts, tc.lim) {
			t.Errorf("%s %v %+v: %s", tc.model, tc.layouts, tc.lim, g)
		}
	}
}

// CheckCoverage is not vacuous: a plan without the extremely skewed loads
// misses the top of the grouped GEMM's max_expert_tokens, and one without
// prefill_hot gating misses the gating predictors.
func TestCheckCoverageFindsGaps(t *testing.T) {
	m := mustModel(t, "qwen3-30b-a3b")
	l := []spec.Layout{{TP: 8, EP: 8}}
	c := planConfig(m, defaultLimits, l, spec.FamilyMoE)
	c.Distributions = []string{DistUniform}
	c.GatingContexts = []string{spec.GatingStandalone}
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, g := range CheckCoverage(p.Shapes, m, p.Config.Layouts, defaultLimits) {
		text = append(text, g.String())
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"moe_grouped_gemm", "max_expert_tokens", "moe_gating_linear", "no shape measures it", "attn_prefill"} {
		if !strings.Contains(all, want) {
			t.Errorf("gaps lack %q:\n%s", want, all)
		}
	}
}

func TestPlanDeterministicAndUnique(t *testing.T) {
	m := mustModel(t, "qwen3-30b-a3b")
	l := []spec.Layout{{TP: 8, EP: 8}}
	a, err := NewPlan(planConfig(m, defaultLimits, l))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlan(planConfig(m, defaultLimits, l))
	if len(a.Shapes) != len(b.Shapes) {
		t.Fatalf("plans differ in size: %d vs %d", len(a.Shapes), len(b.Shapes))
	}
	seen := map[string]bool{}
	for i := range a.Shapes {
		if a.Shapes[i].ID != b.Shapes[i].ID {
			t.Fatalf("shape %d: IDs %s vs %s", i, a.Shapes[i].ID, b.Shapes[i].ID)
		}
		if seen[a.Shapes[i].ID] {
			t.Fatalf("duplicate ID %s", a.Shapes[i].ID)
		}
		seen[a.Shapes[i].ID] = true
	}
	for _, f := range Families {
		if a.FamilyChecksum(f) != b.FamilyChecksum(f) {
			t.Errorf("%s checksum differs between equal plans", f)
		}
	}
	c := planConfig(m, defaultLimits, l)
	c.Seed = 1
	other, _ := NewPlan(c)
	if other.FamilyChecksum(spec.FamilyMoE) == a.FamilyChecksum(spec.FamilyMoE) {
		t.Error("another routing seed left the MoE plan checksum unchanged")
	}
	if other.FamilyChecksum(spec.FamilyLinear) != a.FamilyChecksum(spec.FamilyLinear) {
		t.Error("the routing seed changed the linear plan")
	}
}

// Shards partition the plan: every shape in exactly one shard.
func TestShardsPartition(t *testing.T) {
	p, err := NewPlan(planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 2, EP: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 7} {
		count := map[string]int{}
		for i := 0; i < n; i++ {
			for _, s := range (Shard{Index: i, Count: n}).Take(p.Shapes) {
				count[s.ID]++
			}
		}
		if len(count) != len(p.Shapes) {
			t.Errorf("%d shards hold %d distinct shapes, plan has %d", n, len(count), len(p.Shapes))
		}
		for id, c := range count {
			if c != 1 {
				t.Errorf("%d shards: shape %s appears %d times", n, id, c)
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/3", Shard{0, 3}, true}, {"2/3", Shard{2, 3}, true}, {" 1 / 4 ", Shard{1, 4}, true},
		{"3/3", Shard{}, false}, {"-1/3", Shard{}, false}, {"1", Shard{}, false}, {"a/b", Shard{}, false}, {"0/0", Shard{}, false},
	} {
		got, err := ParseShard(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestParseFamilies(t *testing.T) {
	got, err := ParseFamilies([]string{"moe", "linear"})
	if err != nil || !slices.Equal(got, []spec.Family{spec.FamilyLinear, spec.FamilyMoE}) {
		t.Errorf("ParseFamilies(moe linear) = %v, %v: want plan order", got, err)
	}
	if got, _ := ParseFamilies([]string{"all"}); len(got) != len(Families) {
		t.Errorf("all = %v", got)
	}
	if _, err := ParseFamilies([]string{"gemm"}); err == nil || !strings.Contains(err.Error(), "gemm") {
		t.Errorf("unknown family: %v", err)
	}
}

func TestNewPlanRejectsBadConfig(t *testing.T) {
	m := mustModel(t, "qwen3-30b-a3b")
	for _, tc := range []struct {
		name string
		edit func(*PlanConfig)
		want string
	}{
		{"limits", func(c *PlanConfig) { c.Limits.MaxModelLen = 1 }, "max_model_len"},
		{"tokens", func(c *PlanConfig) { c.Limits.MaxNumBatchedTokens = 0 }, "max_num_batched_tokens"},
		{"layout", func(c *PlanConfig) { c.Layouts = []spec.Layout{{TP: 3}} }, "TP=3"},
		{"distribution", func(c *PlanConfig) { c.Distributions = []string{"zipf"} }, "zipf"},
		{"context", func(c *PlanConfig) { c.GatingContexts = []string{"warm"} }, "warm"},
		{"routing", func(c *PlanConfig) { c.RoutingPaths = []string{"random"} }, "random"},
	} {
		c := planConfig(m, defaultLimits, []spec.Layout{{TP: 1}})
		tc.edit(&c)
		if _, err := NewPlan(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// A dense model has no MoE shapes; a single GPU no collectives.
func TestPlanFamiliesFollowModelAndLayout(t *testing.T) {
	p, err := NewPlan(planConfig(mustModel(t, "llama-3.1-8b"), smallLimits, []spec.Layout{{TP: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Count(spec.FamilyMoE) != 0 || p.Count(spec.FamilyCollective) != 0 {
		t.Errorf("dense TP1 plan has %d MoE and %d collective shapes", p.Count(spec.FamilyMoE), p.Count(spec.FamilyCollective))
	}
	if p.Count(spec.FamilyLinear) == 0 || p.Count(spec.FamilyAttention) == 0 || p.Count(spec.FamilyCPU) == 0 {
		t.Error("dense plan lacks linear, attention or host shapes")
	}
}

// The rotary op carries the layer's heads, so a worker can build it per
// head: heads x head size is its width (MLA included).
func TestRopeCarriesHeads(t *testing.T) {
	for _, name := range []string{"deepseek-v3", "qwen3-30b-a3b", "llama-3.1-8b"} {
		m := mustModel(t, name)
		p, err := NewPlan(planConfig(m, smallLimits, []spec.Layout{{TP: 8}}, spec.FamilyLinear))
		if err != nil {
			t.Fatal(err)
		}
		o := p.Shapes[0].Op(spec.OpAttnRope)
		if o == nil || o.HeadDim == 0 || (o.QHeads+o.KVHeads)*o.HeadDim != o.Width {
			t.Errorf("%s: rope %+v", name, o)
		}
	}
}
