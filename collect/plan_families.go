package collect

import (
	"fmt"

	"github.com/ftk-dev/ftk/spec"
)

// planner builds the shapes of each family. routes caches the router's
// draws per (tokens, distribution): every EP degree and gating context of
// one token count sees the same routing.
type planner struct {
	PlanConfig
	routes map[string][]int
}

// Attention grids: points per octave of the (context, chunk) and (batch,
// context) planes, and of the host overhead grid.
const (
	attnPerOctave = 4
	hostPerOctave = 2
)

func (p *planner) maxTokens() int { return p.Limits.MaxNumBatchedTokens }
func (p *planner) maxLen() int    { return p.Limits.MaxModelLen }
func (p *planner) maxSeqs() int   { return min(p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens) }
func (p *planner) maxChunk() int  { return min(p.maxTokens(), p.maxLen()) }

// all2allBackend is the EP exchange the sweep measures.
func (p *planner) all2allBackend() string {
	if p.All2AllBackend == "" {
		return spec.All2AllAllgatherRS
	}
	return p.All2AllBackend
}

// groupTokens is the most tokens an MoE layer of layout l routes in one
// step: the token budget, times DP when the DP ranks step in lockstep
// through one EP group (spec.MoEExchanges).
func (p *planner) groupTokens(l spec.Layout) int {
	if spec.MoEExchanges(l) {
		return p.maxTokens() * l.Normalize().DP
	}
	return p.maxTokens()
}

// tps returns the distinct TP degrees of the layouts, in order.
func (p *planner) tps() []int {
	var out []int
	seen := map[int]bool{}
	for _, l := range p.Layouts {
		if !seen[l.TP] {
			seen[l.TP] = true
			out = append(out, l.TP)
		}
	}
	return out
}

// layerOps returns the operators of family f one GPU runs under layout l,
// over the model's distinct layer kinds (dense and MoE), first seen first.
// For linear ops it adds the embedding and the LM head.
func (p *planner) layerOps(l spec.Layout, f spec.Family) []spec.Op {
	m := p.Model
	layers := []int{0}
	if last := m.NumLayers - 1; m.IsMoELayer(last) != m.IsMoELayer(0) {
		layers = append(layers, last)
	}
	var ops []spec.Op
	seen := map[string]bool{}
	var heads spec.Op // the layer's attention heads, for the rotary op
	add := func(o spec.Op) {
		if o.Family == spec.FamilyAttention && heads.HeadDim == 0 {
			heads = o
		}
		if o.Family == f && !seen[o.Name] {
			seen[o.Name] = true
			ops = append(ops, o)
		}
	}
	first, last, between := spec.ModelOps(m, l)
	for _, o := range first {
		add(o)
	}
	for _, li := range layers {
		for _, o := range spec.LayerOps(m, l, li) {
			add(o)
		}
	}
	for _, o := range last {
		add(o)
	}
	if between != nil {
		add(*between)
	}
	for i := range ops { // a worker builds rotary (and q/k norm) per head
		if ops[i].Name == spec.OpAttnRope {
			ops[i].QHeads, ops[i].KVHeads, ops[i].HeadDim = heads.QHeads, heads.KVHeads, heads.HeadDim
		}
	}
	return ops
}

// without returns ops less the one named name.
func without(ops []spec.Op, name string) []spec.Op {
	out := make([]spec.Op, 0, len(ops))
	for _, o := range ops {
		if o.Name != name {
			out = append(out, o)
		}
	}
	return out
}

func (p *planner) linear() []Shape {
	var out []Shape
	for _, tp := range p.tps() {
		l := spec.Layout{TP: tp}.Normalize()
		ops := p.layerOps(l, spec.FamilyLinear)
		for _, t := range TokenGrid(1, p.maxTokens()) {
			out = append(out, Shape{Family: spec.FamilyLinear, Kind: KindTokens, Layout: l, Ops: ops, Tokens: t})
		}
	}
	return out
}

// attention plans, per TP degree: decode (batch, context) over the full
// rectangle; prefill (context, chunk) over the triangle context + chunk <=
// max model length; batches of several prefills, at powers of two up to
// the longest chunk and on the token grid beyond it up to the token budget
// (the token-wise ops see every batch size, and readers can check the
// batched rows against the single-sequence ones where both exist); and
// mixed prefill + decode batches.
func (p *planner) attention() []Shape {
	var out []Shape
	for _, tp := range p.tps() {
		l := spec.Layout{TP: tp}.Normalize()
		all := p.layerOps(l, spec.FamilyAttention)
		decodeOps := without(all, spec.OpAttnPrefill)
		prefillOps := without(all, spec.OpAttnDecode)
		for _, b := range LogGrid(1, p.maxSeqs(), attnPerOctave) {
			for _, k := range LogGrid(1, p.maxLen(), attnPerOctave) {
				out = append(out, Shape{Family: spec.FamilyAttention, Kind: KindDecode, Layout: l, Ops: decodeOps,
					Tokens: b, DecodeContexts: repeat(k, b)})
			}
		}
		kvs := append([]int{0}, LogGrid(1, p.maxLen()-1, attnPerOctave)...)
		for _, c := range LogGrid(1, p.maxChunk(), attnPerOctave) {
			for _, k := range kvs {
				if k+c > p.maxLen() {
					break
				}
				out = append(out, Shape{Family: spec.FamilyAttention, Kind: KindPrefill, Layout: l, Ops: prefillOps,
					Tokens: c, PrefillChunks: []int{c}, PrefillContexts: []int{k}})
			}
		}
		multi := append(powersOf(2, 2, p.maxChunk()), TokenGrid(p.maxChunk()+1, p.maxTokens())...)
		for _, t := range multi {
			if t < 2 {
				continue
			}
			seqs := max(2, (t+p.maxLen()-1)/p.maxLen())
			chunks := make([]int, seqs)
			for i := range chunks {
				chunks[i] = t / seqs
				if i < t%seqs {
					chunks[i]++
				}
			}
			out = append(out, Shape{Family: spec.FamilyAttention, Kind: KindMultiPrefill, Layout: l, Ops: prefillOps,
				Tokens: t, PrefillChunks: chunks, PrefillContexts: make([]int, seqs)})
		}
		ctxs := []int{max(1, p.maxLen()/8), max(1, p.maxLen()/2)}
		for _, c := range powersOf(4, min(16, p.maxChunk()), p.maxChunk()) {
			for _, d := range powersOf(4, 1, p.maxSeqs()-1) {
				if c+d > p.maxTokens() {
					continue
				}
				for _, k := range ctxs {
					out = append(out, Shape{Family: spec.FamilyAttention, Kind: KindTrueMixed, Layout: l, Ops: all,
						Tokens: c + d, PrefillChunks: []int{c}, PrefillContexts: []int{0}, DecodeContexts: repeat(k, d)})
				}
			}
		}
	}
	return out
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// moe plans, per layout, token counts x load distributions x gating
// contexts x routing paths; each shape's load is the most loaded EP rank's
// share of one seeded routing draw. One more row per layout, gating
// context and routing path carries a single routed token (the lower edge
// of the grouped GEMM domain, where a rank receives one token-expert pair).
func (p *planner) moe() ([]Shape, error) {
	m := p.Model
	if !m.IsMoE() {
		return nil, nil
	}
	var out []Shape
	seen := map[spec.Layout]bool{}
	for _, l := range p.Layouts {
		if seen[l] {
			continue
		}
		seen[l] = true
		ops := p.layerOps(l, spec.FamilyMoE)
		single := ExpertLoad{Counts: make([]int, m.NumExperts/l.EP)}
		single.Counts[0] = 1
		for _, ctx := range p.GatingContexts {
			for _, path := range p.RoutingPaths {
				out = append(out, Shape{Family: spec.FamilyMoE, Kind: KindSingleRoute, Layout: l, Ops: ops, Tokens: 1,
					Distribution: DistUniform, LoadSeed: p.Seed, GatingContext: ctx, RoutingPath: path, Load: single})
			}
		}
		for _, t := range TokenGrid(1, p.groupTokens(l)) {
			for _, dist := range p.Distributions {
				global, err := p.route(t, dist)
				if err != nil {
					return nil, err
				}
				load := mostLoadedRank(global, l.EP)
				for _, ctx := range p.GatingContexts {
					for _, path := range p.RoutingPaths {
						out = append(out, Shape{Family: spec.FamilyMoE, Kind: KindTokens, Layout: l, Ops: ops, Tokens: t,
							Distribution: dist, LoadSeed: p.Seed, GatingContext: ctx, RoutingPath: path, Load: load})
					}
				}
			}
		}
	}
	return out, nil
}

func (p *planner) route(tokens int, dist string) ([]int, error) {
	k := fmt.Sprintf("%d/%s", tokens, dist)
	if r, ok := p.routes[k]; ok {
		return r, nil
	}
	r, err := routeTokens(tokens, p.Model.NumExperts, p.Model.TopK, dist, p.Seed)
	if err != nil {
		return nil, err
	}
	p.routes[k] = r
	return r, nil
}

// collectives plans the TP all-reduce per TP degree, EP dispatch and
// combine per (TP, EP) layout (up to top-k copies of every token; keyed by
// the layout's TP as the predictors are) and the PP
// activation send when a layout pipelines. Sizes are whole tokens of BF16
// activations.
func (p *planner) collectives() []Shape {
	m := p.Model
	tokenBytes := int64(m.HiddenSize) * 2
	var out []Shape
	add := func(name string, workers int, l spec.Layout, maxT int) {
		o := spec.Op{Name: name, Family: spec.FamilyCollective, Kernels: 1, Width: m.HiddenSize, Workers: workers, ElemBytes: 2}
		if name == spec.OpEPDispatch || name == spec.OpEPCombine {
			o.DPRanks, o.Backend = l.DP, p.all2allBackend()
		}
		for _, t := range TokenGrid(1, maxT) {
			out = append(out, Shape{Family: spec.FamilyCollective, Kind: KindCollective, Layout: l, Ops: []spec.Op{o},
				Tokens: t, Collective: name, Workers: workers, SizeBytes: int64(t) * tokenBytes})
		}
	}
	for _, tp := range p.tps() {
		if tp > 1 {
			add(spec.OpAllReduce, tp, spec.Layout{TP: tp}.Normalize(), p.maxTokens())
		}
	}
	// EP dispatch and combine run only where vLLM exchanges tokens: on
	// data-parallel layouts, over every rank (TP x DP), up to top-k token
	// widths per token of the lockstep step (spec.EPExchange; the
	// gathering backends' hidden + router outputs fit within that for
	// top-k >= 2).
	seenEP := map[[3]int]bool{}
	for _, l := range p.Layouts {
		l = l.Normalize()
		workers := l.TP * l.DP
		if k := [3]int{l.TP, l.EP, workers}; spec.MoEExchanges(l) && m.IsMoE() && !seenEP[k] {
			seenEP[k] = true
			el := spec.Layout{TP: l.TP, EP: l.EP, DP: l.DP}.Normalize()
			maxT := p.groupTokens(l) * max(m.TopK, 1+(m.NumExperts+m.HiddenSize-1)/m.HiddenSize)
			add(spec.OpEPDispatch, workers, el, maxT)
			add(spec.OpEPCombine, workers, el, maxT)
		}
	}
	for _, l := range p.Layouts {
		if l.PP > 1 {
			add(spec.OpSendRecv, 2, spec.Layout{PP: 2}.Normalize(), p.maxTokens())
			break
		}
	}
	return out
}

// hostOps are the host-side parts of an engine step; the Ray hand-off only
// exists with more than one worker.
func hostOps(tp int) []spec.Op {
	names := []string{spec.OpCPUSchedule, spec.OpCPUPrepareInputs, spec.OpCPUSampler, spec.OpCPUProcessOutputs}
	if tp > 1 {
		names = append(names, spec.OpCPURayComm)
	}
	ops := make([]spec.Op, len(names))
	for i, n := range names {
		ops[i] = spec.Op{Name: n, Family: spec.FamilyCPU}
	}
	return ops
}

// host plans engine-step compositions per TP degree: decode-only batches,
// single prefills, and one prefill with decodes.
func (p *planner) host() []Shape {
	var out []Shape
	for _, tp := range p.tps() {
		l := spec.Layout{TP: tp}.Normalize()
		ops := hostOps(tp)
		add := func(b, pre, dec int) {
			out = append(out, Shape{Family: spec.FamilyCPU, Kind: KindHost, Layout: l, Ops: ops,
				Tokens: pre + dec, BatchSize: b, PrefillTokens: pre, DecodeTokens: dec})
		}
		for _, b := range LogGrid(1, p.maxSeqs(), hostPerOctave) {
			add(b, 0, b)
		}
		// The host issue costs, once per TP degree (they do not depend on
		// the batch).
		var issue []spec.Op
		for _, n := range spec.IssueOps() {
			issue = append(issue, spec.Op{Name: n, Family: spec.FamilyCPU})
		}
		out = append(out, Shape{Family: spec.FamilyCPU, Kind: KindIssue, Layout: l, Ops: issue,
			Tokens: 1, BatchSize: 1, DecodeTokens: 1})
		for _, pre := range LogGrid(1, p.maxChunk(), 1) {
			add(1, pre, 0)
		}
		for _, pre := range powersOf(4, min(16, p.maxChunk()), p.maxChunk()) {
			for _, d := range powersOf(4, 1, p.maxSeqs()-1) {
				if pre+d <= p.maxTokens() {
					add(1+d, pre, d)
				}
			}
		}
	}
	return out
}
