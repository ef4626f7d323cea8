package cost

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Routing tables. A MoE layer's grouped GEMM waits for the slowest EP rank,
// and with an all-to-all backend so do dispatch and combine; what the
// slowest rank gets depends on where the router sends the batch's tokens.
// Pricing every rank of every MoE layer at every step would cost hundreds
// of predictor queries a step, so the draws are made ahead:
//
//   - For a step of T tokens, a table holds routeSamples independent draws
//     of the per-expert token counts of one layer (expertRouter.draw), each
//     priced rank by rank: the slowest rank's grouped GEMM, and dispatch and
//     combine sized by the most loaded rank. Each is stored as a ratio to
//     the even-load cost of T tokens (every expert its share).
//   - Every step, each MoE layer of the stage picks one of the table's draws
//     at random, and the layer costs its ratio times the even-load cost of
//     the step's tokens (cached per token count like every token-priced op).
//
// Tables are built when a token count is first seen: one per count up to
// exactBins tokens, then one per bin of counts binGrowth wide (6.25%),
// drawn at the bin's geometric centre. Within a bin only the ratio is
// shared; the even-load cost is the step's own, so the error is the change
// of the imbalance ratio within 3% of the centre: the slowest rank's excess
// over its share falls as 1/sqrt(T), so it moves by 1.5% of itself (at 64
// tokens, where the excess is about 16%, by 0.25% of the load). With n
// draws a table's mean ratio is within sigma/sqrt(n) of the routing's,
// where sigma is the spread of the slowest rank's cost between draws: a
// table holds 64 draws, or 16 (each stored four times) when a step routes
// more than bigDrawAssignments copies, where sigma is a few percent.
const (
	routeSamples       = 64 // a power of two
	routeSampleBits    = 6
	bigDrawSamples     = 16 // divides routeSamples
	bigDrawAssignments = 4096
	exactBins          = 64
	binGrowth          = 1.0 / 16
)

// routeTable holds routeSamples priced draws for one token-count bin.
type routeTable struct {
	ratio  [routeSamples][2]float32 // grouped GEMM and EP cost ratios to the even load
	extrap [routeSamples]uint8      // bit i: routed-group op i extrapolated
	// anyExtrap is set when some draw extrapolated.
	anyExtrap bool
}

// routingModel draws and prices MoE routing for one cost model.
type routingModel struct {
	cfg                      runresult.MoEConfig
	experts, topK, ep, local int
	routers                  []*expertRouter
	layerRouter              map[int]int
	tables                   [][]*routeTable
	binOf                    []int32
	counts                   []int32
	seed                     uint64
	state                    uint64
	pool                     uint64 // unused random bits of the last draw
	poolLeft                 int    // draws left in pool
	// built counts the tables the run has used, built here or taken from
	// shared.
	built int
	// shared, when set, holds tables other runs built; sharedKey is this
	// routing's key there (empty: not shared, see sharingKey).
	shared    *RoutingTables
	sharedKey string

	cm               *OpCostModel
	names            []string
	gemm, disp, comb int // indices in the routed group (-1: absent)
	ops              []pricedOp
	// gemmMemo caches the roofline-priced grouped GEMM of an EP rank by
	// its features (nil: the GEMM has a predictor, or made on first use).
	gemmMemo *gemmMemo
}

// gemmMemo caches an EP rank's grouped GEMM time by (routed, most,
// active), the features layerCost prices it at: draws of a table give
// ranks the same features again and again. A direct-mapped cache: a slot
// keeps the last features stored there; a miss prices afresh. Only for the
// built-in device model, whose price is a function of the features (a
// predictor also counts its extrapolations, call by call).
type gemmMemo struct {
	key [gemmMemoSlots]uint64 // (routed+1)<<32 | most<<12 | active (0: empty)
	ms  [gemmMemoSlots]float64
}

const gemmMemoSlots = 1024

func newRoutingModel(m *spec.Model, l spec.Layout, c *OpCostConfig) (*routingModel, error) {
	rm := &routingModel{cfg: c.MoE, experts: m.NumExperts, topK: m.TopK, ep: l.EP, local: m.NumExperts / l.EP,
		layerRouter: map[int]int{}, counts: make([]int32, m.NumExperts),
		seed: c.MoE.Seed, state: c.MoE.Seed ^ 0x9e3779b97f4a7c15, shared: c.RoutingTables}
	switch c.MoE.Routing {
	case runresult.RoutingUniform:
		r, err := newRouter(m.NumExperts, m.TopK, nil, false)
		if err != nil {
			return nil, err
		}
		rm.routers = append(rm.routers, r)
	case runresult.RoutingSkewed:
		r, err := newRouter(m.NumExperts, m.TopK, zipfWeights(m.NumExperts, c.MoE.Skew), true)
		if err != nil {
			return nil, err
		}
		rm.routers = append(rm.routers, r)
	case runresult.RoutingReplay:
		if c.Histogram == nil {
			return nil, fmt.Errorf("simulate: replay routing without an expert histogram")
		}
		byWeights := map[*float64]int{}
		for i := 0; i < m.NumLayers; i++ {
			if !m.IsMoELayer(i) {
				continue
			}
			w, err := c.Histogram.layerWeights(c.MoE.Histogram, i)
			if err != nil {
				return nil, err
			}
			if ri, ok := byWeights[&w[0]]; ok {
				rm.layerRouter[i] = ri
				continue
			}
			r, err := newRouter(m.NumExperts, m.TopK, w, false)
			if err != nil {
				return nil, fmt.Errorf("expert histogram %s layer %d: %w", c.MoE.Histogram, i, err)
			}
			byWeights[&w[0]] = len(rm.routers)
			rm.layerRouter[i] = len(rm.routers)
			rm.routers = append(rm.routers, r)
		}
	default:
		return nil, fmt.Errorf("simulate: routing %q has no router", c.MoE.Routing)
	}
	rm.tables = make([][]*routeTable, len(rm.routers))
	maxT := c.Limits.MaxNumBatchedTokens * l.DP // lockstep steps route every DP rank's tokens
	rm.binOf = make([]int32, maxT+1)
	for t := 1; t <= maxT; t++ {
		rm.binOf[t] = int32(tokenBin(t))
	}
	for i := range rm.tables {
		rm.tables[i] = make([]*routeTable, rm.binOf[maxT]+1)
	}
	return rm, nil
}

// tokenBin is the table bin of a step of t tokens.
func tokenBin(t int) int {
	if t <= exactBins {
		return t
	}
	return exactBins + 1 + int(math.Log(float64(t)/exactBins)/math.Log1p(binGrowth))
}

// binTokens is the token count a bin's table is drawn at: the count itself
// up to exactBins, else the bin's geometric centre.
func binTokens(b int) int {
	if b <= exactBins {
		return b
	}
	return int(math.Round(exactBins * math.Pow(1+binGrowth, float64(b-exactBins-1)+0.5)))
}

// routerOf is the router of model layer i.
func (rm *routingModel) routerOf(i int) int { return rm.layerRouter[i] }

// bind takes the ops of a stage's routed group: the first group sets the
// pricing ops, later ones must list the same ops in the same order (their
// extrapolation bits are shared).
func (rm *routingModel) bind(cm *OpCostModel, g *opGroup) error {
	names := make([]string, len(g.ops))
	for i := range g.ops {
		names[i] = g.ops[i].op.Name
	}
	if rm.cm != nil {
		if fmt.Sprint(names) != fmt.Sprint(rm.names) {
			return fmt.Errorf("simulate: internal error: MoE stages route ops %v and %v", rm.names, names)
		}
		return nil
	}
	rm.cm, rm.names, rm.gemm, rm.disp, rm.comb = cm, names, -1, -1, -1
	rm.ops = make([]pricedOp, len(g.ops))
	copy(rm.ops, g.ops)
	for i, n := range names {
		switch n {
		case spec.OpMoEGroupedGEMM:
			rm.gemm = i
		case spec.OpEPDispatch:
			rm.disp = i
		case spec.OpEPCombine:
			rm.comb = i
		}
	}
	if rm.gemm < 0 {
		return fmt.Errorf("simulate: internal error: routed ops %v lack the grouped GEMM", names)
	}
	if rm.shared != nil {
		rm.sharedKey = rm.sharingKey()
	}
	return nil
}

// next returns a random draw index: 6 bits of a splitmix64 output, which
// serves ten draws.
func (rm *routingModel) next() int {
	if rm.poolLeft == 0 {
		rm.state += 0x9e3779b97f4a7c15
		z := rm.state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		rm.pool, rm.poolLeft = z^(z>>31), 64/routeSampleBits
	}
	j := int(rm.pool & (routeSamples - 1))
	rm.pool >>= routeSampleBits
	rm.poolLeft--
	return j
}

// routedCost adds the routed MoE ops of a step of tokens tokens on stage
// st: the even-load cost scaled, layer by layer, by a routing draw.
func (cm *OpCostModel) routedCost(st *stageModel, tokens int, c *StepCost) {
	rm := cm.routing
	e := cm.memo(&st.routed, st.routedByTokens, tokens)
	bin := int(rm.binOf[tokens])
	shared := len(rm.routers) == 1
	var t *routeTable
	if shared {
		t = rm.table(0, bin)
	}
	var sm, se float64
	for _, ri := range st.routers {
		if !shared {
			t = rm.table(ri, bin)
		}
		j := rm.next()
		sm += float64(t.ratio[j][0])
		se += float64(t.ratio[j][1])
		if t.anyExtrap && t.extrap[j] != 0 {
			st.routed.countExtrap(uint64(t.extrap[j]))
		}
	}
	n := float64(len(st.routers))
	c.Ms[CompMoE] += e.ms[CompMoE] * sm / n
	c.Ms[CompEPComm] += e.ms[CompEPComm] * se / n
	c.Kernels += st.routed.kernels
}

// meanRatio is the mean over router ri's draws for a step of tokens tokens
// of the routed cost's ratio to the even load: of the grouped GEMM (gemm)
// or of the EP exchange.
func (rm *routingModel) meanRatio(ri, tokens int, gemm bool) float64 {
	if tokens >= len(rm.binOf) {
		return 1
	}
	t := rm.table(ri, int(rm.binOf[tokens]))
	k := 1
	if gemm {
		k = 0
	}
	var sum float64
	for j := range t.ratio {
		sum += float64(t.ratio[j][k])
	}
	return sum / float64(len(t.ratio))
}

// table returns router ri's table for bin b, taking it from the shared
// store or building it on first use.
func (rm *routingModel) table(ri, b int) *routeTable {
	if t := rm.tables[ri][b]; t != nil {
		return t
	}
	if rm.sharedKey != "" {
		if t := rm.shared.get(rm.sharedKey, ri, b); t != nil {
			rm.tables[ri][b] = t
			rm.built++
			return t
		}
		t := rm.build(ri, b)
		rm.shared.put(rm.sharedKey, ri, b, t)
		return t
	}
	return rm.build(ri, b)
}

// build draws and prices the table of router ri for bin b.
func (rm *routingModel) build(ri, b int) *routeTable {
	t := &routeTable{}
	tokens := binTokens(b)
	rng := newDrawRNG(rm.seed, uint64(ri)<<32|uint64(b))
	rm.routers[ri].restart()
	evenM, evenE := rm.evenCost(tokens)
	n := routeSamples
	if tokens*rm.topK > bigDrawAssignments {
		n = bigDrawSamples
	}
	for j := range n {
		rm.routers[ri].draw(rng, tokens, rm.counts)
		m, e, mask := rm.layerCost(rm.counts)
		t.ratio[j], t.extrap[j] = [2]float32{ratio(m, evenM), ratio(e, evenE)}, mask
		t.anyExtrap = t.anyExtrap || mask != 0
	}
	for j := n; j < routeSamples; j++ {
		t.ratio[j], t.extrap[j] = t.ratio[j%n], t.extrap[j%n]
	}
	rm.tables[ri][b] = t
	rm.built++
	return t
}

func ratio(a, b float64) float32 {
	if b <= 0 {
		return 1
	}
	return float32(a / b)
}

// evenCost is one layer's routed cost when every expert gets its share.
func (rm *routingModel) evenCost(tokens int) (moeMs, epMs float64) {
	cm := rm.cm
	for i := range rm.ops {
		p := &rm.ops[i]
		ms, _ := cm.price(p, cm.tokenFeatures(p, tokens))
		if p.comp == CompMoE {
			moeMs += ms
		} else {
			epMs += ms
		}
	}
	return moeMs, epMs
}

// layerCost prices one layer for per-expert token counts: the grouped GEMM
// of every EP rank (experts placed contiguously, as vLLM does), of which
// the slowest sets the layer's time (on the roofline, streaming the weights
// of the experts that got tokens), and, on a data-parallel layout,
// dispatch and combine: an all-to-all backend's sized by the copies the
// most loaded rank receives (every rank waits for it), the gathering
// backends' by the step's tokens whatever the routing. mask marks the
// routed-group ops whose predictor extrapolated for any rank.
func (rm *routingModel) layerCost(counts []int32) (moeMs, epMs float64, mask uint8) {
	cm := rm.cm
	var x [3]float64
	gemmX := x[:]
	if p := rm.ops[rm.gemm].pred; p != nil {
		if _, table := p.(tablePredictor); !table {
			gemmX = x[:2] // a fitted predictor reads its two features only
		}
	}
	memo := rm.ops[rm.gemm].pred == nil
	maxRouted, copies := 0, 0
	for _, c := range counts {
		copies += int(c)
	}
	for r := 0; r < rm.ep; r++ {
		routed, most, active := 0, int32(0), 0
		for _, c := range counts[r*rm.local : (r+1)*rm.local] {
			routed += int(c)
			most = max(most, c)
			if c > 0 {
				active++
			}
		}
		if routed == 0 {
			continue // no tokens: never the slowest rank
		}
		maxRouted = max(maxRouted, routed)
		var ms float64
		if memo {
			ms = rm.rankGEMMMs(routed, int(most), active)
		} else {
			x[0], x[1], x[2] = float64(routed), float64(most), float64(active)
			var ex bool
			ms, ex = cm.price(&rm.ops[rm.gemm], gemmX)
			if ex {
				mask |= 1 << rm.gemm
			}
		}
		moeMs = max(moeMs, ms)
	}
	for _, i := range []int{rm.disp, rm.comb} {
		if i < 0 {
			continue
		}
		x[0] = cm.exchangeBytes(rm.ops[i].op.Name, copies/rm.topK, maxRouted)
		ms, ex := cm.price(&rm.ops[i], x[:1])
		epMs += ms
		if ex {
			mask |= 1 << i
		}
	}
	return moeMs, epMs, mask
}

// rankGEMMMs is the roofline price of one EP rank's grouped GEMM for
// routed copies over active experts, the busiest taking most: from the
// memo when its features are there, else priced (and stored) as layerCost
// prices it.
func (rm *routingModel) rankGEMMMs(routed, most, active int) float64 {
	p := &rm.ops[rm.gemm]
	x := [3]float64{float64(routed), float64(most), float64(active)}
	if routed >= 1<<31 || most >= 1<<20 || active >= 1<<12 {
		ms, _ := rm.cm.price(p, x[:])
		return ms
	}
	if rm.gemmMemo == nil {
		rm.gemmMemo = new(gemmMemo)
	}
	key := (uint64(routed)+1)<<32 | uint64(most)<<12 | uint64(active)
	slot := (uint64(routed)*0x9e3779b1 ^ uint64(most)<<4 ^ uint64(active)) & (gemmMemoSlots - 1)
	if rm.gemmMemo.key[slot] == key {
		return rm.gemmMemo.ms[slot]
	}
	ms, _ := rm.cm.price(p, x[:])
	rm.gemmMemo.key[slot], rm.gemmMemo.ms[slot] = key, ms
	return ms
}

// LayerRoutedCost prices one MoE layer of stage 0 for per-expert token
// counts (one per expert), as a routing draw is priced: the milliseconds of
// the grouped GEMM of the slowest EP rank and of EP dispatch plus combine.
// It fails for a dense model or even routing (no draws).
func (cm *OpCostModel) LayerRoutedCost(counts []int) (moeMs, epMs float64, err error) {
	rm := cm.routing
	if rm == nil || rm.cm == nil {
		return 0, 0, fmt.Errorf("simulate: no routed MoE layers (dense model or even routing)")
	}
	if len(counts) != rm.experts {
		return 0, 0, fmt.Errorf("simulate: %d counts for %d experts", len(counts), rm.experts)
	}
	c := make([]int32, len(counts))
	for i, v := range counts {
		c[i] = int32(v)
	}
	moeMs, epMs, _ = rm.layerCost(c)
	return moeMs, epMs, nil
}

func (cm *OpCostModel) routingName() string {
	if cm.routing == nil {
		return runresult.RoutingEven
	}
	return cm.routing.cfg.Routing
}

func (cm *OpCostModel) routingSkew() float64 {
	if cm.routing == nil {
		return 0
	}
	return cm.routing.cfg.Skew
}

func (cm *OpCostModel) routingHistogram() string {
	if cm.routing == nil {
		return ""
	}
	return cm.routing.cfg.Histogram
}

func (cm *OpCostModel) routingBackend() string {
	l := cm.layout
	switch {
	case !spec.MoEExchanges(l) && l.EP > 1:
		return "none at DP=1: every TP rank holds every token, runs its local experts, and the TP all-reduce sums them (vLLM: use_all2all_kernels is dp_size > 1 and use_ep)"
	case !spec.MoEExchanges(l):
		return "none (EP=1, DP=1): the TP all-reduce sums the experts' outputs"
	}
	return cm.exchange.Backend
}

func (cm *OpCostModel) routingTables() int {
	if cm.routing == nil {
		return 0
	}
	return cm.routing.built
}

func (cm *OpCostModel) routingMethod() string {
	if cm.routing == nil {
		return "even load: every expert gets tokens x top-k / experts (no draw)"
	}
	return fmt.Sprintf("per step and MoE layer, one of %d routing draws made for the step's token count "+
		"(a table per count up to %d tokens, per %.1f%%-wide bin above) and priced rank by rank: the slowest "+
		"EP rank sets the grouped GEMM and, with an all-to-all backend, dispatch and combine; a draw of up to %d "+
		"routed copies picks each token's top-k in turn, larger ones are a multinomial over the experts' inclusion probabilities",
		routeSamples, exactBins, 100*binGrowth, exactAssignments)
}
