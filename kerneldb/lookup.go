package kerneldb

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kernels is the shape-indexed kernel tables of one GPU at one vLLM
// version: what a simulated step looks up, op by op. Each method returns
// a time in milliseconds and how it was found (Fit); Uncovered means the
// tables have no row of that dtype or kind and the caller falls back.
//
// Where one shape was measured with several kernels (FP8 block GEMMs by
// CUTLASS, DeepGEMM and FlashInfer; FA3 and FA4 attention), the kernel
// source with the most rows of the table is taken, the full sweep of that
// table (Sources says which).
type Kernels struct {
	Device  string // the device column of the rows
	Version string // the vLLM version asked for ("" : the newest)
	// Resolutions lists the file each table was read from.
	Resolutions []Resolution
	// Sources lists, per table and dtype, the kernel source used.
	Sources map[string]string

	gemm      map[string]*gemmTable // by dtype
	ctx, gen  map[attnKey]*grid2
	ctxByDim  map[string][]attnKey // head_dim/kv dtype -> configs
	genByDim  map[string][]attnKey
	moe       map[moeKey]*curve
	moeKeys   []moeKey
	allReduce map[int]*curve // graph-mode rows by GPU count
	// mlaCtx and mlaGen are the MLA attention kernels (not the module
	// tables) by KV dtype and heads on the GPU.
	mlaCtx, mlaGen map[mlaKey]*grid2
}

// PricedTables are the tables Load reads for pricing.
var PricedTables = []string{TableGEMM, TableContextAttention, TableGenAttention, TableMoE, TableAllReduce, TableContextMLA, TableGenMLA}

// Load reads the priced tables of db for vLLM version v (Resolve's rule);
// a table the database lacks is left out (its lookups are Uncovered).
func Load(db *DB, v string) (*Kernels, error) {
	k := &Kernels{Version: v, Sources: map[string]string{}}
	for _, name := range PricedTables {
		r, err := db.Resolve(name, v)
		if err != nil {
			continue
		}
		t, err := ReadTable(r.Path)
		if err != nil {
			return nil, err
		}
		k.Resolutions = append(k.Resolutions, r)
		for d := range t.Devices() {
			k.Device = d
		}
		switch name {
		case TableGEMM:
			k.buildGEMM(t.GEMM)
		case TableContextAttention:
			k.ctx, k.ctxByDim = k.buildAttention(t.Attention, name)
		case TableGenAttention:
			k.gen, k.genByDim = k.buildAttention(t.Attention, name)
		case TableMoE:
			k.buildMoE(t.MoE)
		case TableAllReduce:
			k.buildAllReduce(t.AllReduce)
		case TableContextMLA:
			k.mlaCtx = k.buildMLA(t.MLA, name)
		case TableGenMLA:
			k.mlaGen = k.buildMLA(t.MLA, name)
		}
	}
	if len(k.Resolutions) == 0 {
		return nil, fmt.Errorf("kernel database %s: none of the tables ftk prices (%s)", db.Dir, strings.Join(PricedTables, ", "))
	}
	return k, nil
}

// dominant picks, among the kernel sources of a set of rows, the one with
// the most rows (ties: the first in name order).
func dominant(count map[string]int) string {
	var names []string
	for s := range count {
		names = append(names, s)
	}
	sort.Strings(names)
	best := ""
	for _, s := range names {
		if best == "" || count[s] > count[best] {
			best = s
		}
	}
	return best
}

// gemmTable is one dtype's GEMMs: a curve over M per measured (N, K).
type gemmTable struct {
	ns, ks []float64
	curves map[[2]float64]*curve
}

func (k *Kernels) buildGEMM(rows []GEMMRow) {
	count := map[string]map[string]int{}
	for _, r := range rows {
		if count[r.Dtype] == nil {
			count[r.Dtype] = map[string]int{}
		}
		count[r.Dtype][r.KernelSource]++
	}
	k.gemm = map[string]*gemmTable{}
	type pts struct{ xs, ys []float64 }
	for dt, c := range count {
		src := dominant(c)
		k.Sources[TableGEMM+"/"+dt] = src
		by := map[[2]float64]*pts{}
		for _, r := range rows {
			if r.Dtype != dt || r.KernelSource != src {
				continue
			}
			key := [2]float64{float64(r.N), float64(r.K)}
			p := by[key]
			if p == nil {
				p = &pts{}
				by[key] = p
			}
			p.xs, p.ys = append(p.xs, float64(r.M)), append(p.ys, r.LatencyMs)
		}
		g := &gemmTable{curves: map[[2]float64]*curve{}}
		nset, kset := map[float64]bool{}, map[float64]bool{}
		for key, p := range by {
			c := newCurve(p.xs, p.ys)
			g.curves[key] = &c
			nset[key[0]], kset[key[1]] = true, true
		}
		g.ns, g.ks = sortedKeys(nset), sortedKeys(kset)
		k.gemm[dt] = g
	}
}

func sortedKeys(m map[float64]bool) []float64 {
	out := make([]float64, 0, len(m))
	for x := range m {
		out = append(out, x)
	}
	sort.Float64s(out)
	return out
}

// bracket returns the measured values around x (equal at the ends or on
// a measured value) and x's log-linear weight on the upper one.
func bracket(vs []float64, x float64) (lo, hi, w float64) {
	n := len(vs)
	switch {
	case x <= vs[0]:
		return vs[0], vs[0], 0
	case x >= vs[n-1]:
		return vs[n-1], vs[n-1], 0
	}
	i := sort.SearchFloat64s(vs, x)
	if vs[i] == x {
		return x, x, 0
	}
	lo, hi = vs[i-1], vs[i]
	return lo, hi, math.Log(x/lo) / math.Log(hi/lo)
}

// GEMM is an M x K times K x N GEMM in dtype. A measured (N, K) is
// interpolated along M (the curve rule); between measured N and K the
// times of the four bracketing (N, K) are each scaled by the query's
// N*K over theirs (the work at a fixed M) and blended log-linearly; past
// the measured N or K the nearest is scaled the same way.
func (k *Kernels) GEMM(dtype string, m, n, kk float64) (float64, Fit) {
	g := k.gemm[dtype]
	if g == nil || len(g.ns) == 0 {
		return math.NaN(), Uncovered
	}
	if cv := g.curves[[2]float64{n, kk}]; cv != nil {
		return cv.at(m)
	}
	n0, n1, wn := bracket(g.ns, n)
	k0, k1, wk := bracket(g.ks, kk)
	var sum, wsum float64
	fit := Exact
	for _, c := range [4]struct{ n, k, w float64 }{{n0, k0, (1 - wn) * (1 - wk)}, {n1, k0, wn * (1 - wk)}, {n0, k1, (1 - wn) * wk}, {n1, k1, wn * wk}} {
		if c.w == 0 && !(c.n == n0 && c.k == k0) {
			continue
		}
		cv := g.curves[[2]float64{c.n, c.k}]
		if cv == nil {
			continue
		}
		t, f := cv.at(m)
		fit = worse(fit, f)
		if c.n != n || c.k != kk {
			fit = worse(fit, Scaled)
			t *= n * kk / (c.n * c.k)
		}
		w := c.w
		if w == 0 {
			w = 1e-12
		}
		sum, wsum = sum+w*t, wsum+w
	}
	if wsum == 0 {
		return math.NaN(), Uncovered
	}
	if n < g.ns[0] || n > g.ns[len(g.ns)-1] || kk < g.ks[0] || kk > g.ks[len(g.ks)-1] {
		fit = worse(fit, Extrapolated)
	}
	return sum / wsum, fit
}

// attnKey is one attention configuration of a table.
type attnKey struct {
	heads, kvHeads, headDim int
	kvDtype                 string
}

func dimKey(headDim int, kvDtype string) string { return fmt.Sprintf("%d/%s", headDim, kvDtype) }

// buildAttention indexes full-attention rows (no sliding window) by
// configuration: a grid over (batch, ISL) for context rows, over (batch,
// KV length) for generation rows.
func (k *Kernels) buildAttention(rows []AttentionRow, table string) (map[attnKey]*grid2, map[string][]attnKey) {
	total := map[string]int{}
	per := map[attnKey]map[string]int{}
	for _, r := range rows {
		if r.WindowSize > 0 || r.AttnDtype != "bfloat16" {
			continue
		}
		key := attnKey{r.Heads, r.KVHeads, r.HeadDim, r.KVCacheDtype}
		if per[key] == nil {
			per[key] = map[string]int{}
		}
		per[key][r.KernelSource]++
		total[r.KernelSource]++
	}
	k.Sources[table] = dominant(total)
	type pts struct{ xs, ys, ts []float64 }
	by := map[attnKey]*pts{}
	src := map[attnKey]string{}
	for key, c := range per {
		best := ""
		for s := range c {
			if best == "" || total[s] > total[best] || total[s] == total[best] && s < best {
				best = s
			}
		}
		src[key] = best
	}
	for _, r := range rows {
		key := attnKey{r.Heads, r.KVHeads, r.HeadDim, r.KVCacheDtype}
		if r.WindowSize > 0 || r.AttnDtype != "bfloat16" || r.KernelSource != src[key] {
			continue
		}
		p := by[key]
		if p == nil {
			p = &pts{}
			by[key] = p
		}
		y := float64(r.ISL)
		if !r.Context {
			y = float64(r.KVLen())
		}
		p.xs, p.ys, p.ts = append(p.xs, float64(r.Batch)), append(p.ys, y), append(p.ts, r.LatencyMs)
	}
	out := map[attnKey]*grid2{}
	dims := map[string][]attnKey{}
	for key, p := range by {
		g := newGrid2(p.xs, p.ys, p.ts)
		out[key] = &g
		d := dimKey(key.headDim, key.kvDtype)
		dims[d] = append(dims[d], key)
	}
	for _, ks := range dims {
		sort.Slice(ks, func(i, j int) bool {
			if ks[i].heads != ks[j].heads {
				return ks[i].heads < ks[j].heads
			}
			return ks[i].kvHeads < ks[j].kvHeads
		})
	}
	return out, dims
}

// attention answers a lookup in grids at configuration key: the
// configuration itself, else the measured one of the same head size and
// KV dtype nearest in (log heads, log KV heads), its time scaled by the
// ratio of byHeads (query heads for context, KV heads for generation).
func attention(grids map[attnKey]*grid2, dims map[string][]attnKey, key attnKey, x, y float64, kvScaled bool) (float64, Fit) {
	if g := grids[key]; g != nil {
		return g.at(x, y)
	}
	best, bestD := attnKey{}, math.Inf(1)
	for _, c := range dims[dimKey(key.headDim, key.kvDtype)] {
		d := math.Abs(math.Log(float64(c.heads)/float64(key.heads))) + math.Abs(math.Log(float64(c.kvHeads)/float64(key.kvHeads)))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if math.IsInf(bestD, 1) {
		return math.NaN(), Uncovered
	}
	t, f := grids[best].at(x, y)
	scale := float64(key.heads) / float64(best.heads)
	if kvScaled {
		scale = float64(key.kvHeads) / float64(best.kvHeads)
	}
	return t * scale, worse(f, Scaled)
}

// ContextAttention is the prefill attention of batch sequences of isl
// tokens each (no cached context) with heads query and kvHeads KV heads
// of headDim on this GPU, the KV cache in kvDtype (bfloat16 or fp8).
func (k *Kernels) ContextAttention(kvDtype string, heads, kvHeads, headDim int, batch, isl float64) (float64, Fit) {
	return attention(k.ctx, k.ctxByDim, attnKey{heads, kvHeads, headDim, kvDtype}, batch, isl, false)
}

// GenerationAttention is the decode attention of batch sequences, each
// attending over kvLen cached tokens.
func (k *Kernels) GenerationAttention(kvDtype string, heads, kvHeads, headDim int, batch, kvLen float64) (float64, Fit) {
	return attention(k.gen, k.genByDim, attnKey{heads, kvHeads, headDim, kvDtype}, batch, kvLen, true)
}

// moeKey is one fused-MoE configuration.
type moeKey struct {
	dtype, dist                          string
	hidden, inter, topk, experts, tp, ep int
}

func (k *Kernels) buildMoE(rows []MoERow) {
	total := map[string]int{}
	for _, r := range rows {
		total[r.KernelSource]++
	}
	per := map[moeKey]string{}
	for _, r := range rows {
		key := moeKey{r.Dtype, r.Distribution, r.Hidden, r.InterSize, r.TopK, r.Experts, r.MoETP, r.MoEEP}
		s, ok := per[key]
		if !ok || total[r.KernelSource] > total[s] || total[r.KernelSource] == total[s] && r.KernelSource < s {
			per[key] = r.KernelSource
		}
	}
	type pts struct{ xs, ys []float64 }
	by := map[moeKey]*pts{}
	srcs := map[string]map[string]int{}
	for _, r := range rows {
		key := moeKey{r.Dtype, r.Distribution, r.Hidden, r.InterSize, r.TopK, r.Experts, r.MoETP, r.MoEEP}
		if r.KernelSource != per[key] {
			continue
		}
		if srcs[r.Dtype] == nil {
			srcs[r.Dtype] = map[string]int{}
		}
		srcs[r.Dtype][r.KernelSource]++
		p := by[key]
		if p == nil {
			p = &pts{}
			by[key] = p
		}
		p.xs, p.ys = append(p.xs, float64(r.NumTokens)), append(p.ys, r.LatencyMs)
	}
	for dt, c := range srcs {
		k.Sources[TableMoE+"/"+dt] = dominant(c)
	}
	k.moe = map[moeKey]*curve{}
	for key, p := range by {
		c := newCurve(p.xs, p.ys)
		k.moe[key] = &c
		k.moeKeys = append(k.moeKeys, key)
	}
	sort.Slice(k.moeKeys, func(i, j int) bool { return fmt.Sprint(k.moeKeys[i]) < fmt.Sprint(k.moeKeys[j]) })
}

// MoE is one fused-MoE layer (routing alignment, both grouped GEMMs, the
// activation and the top-k sum, as vLLM's fused_experts runs them) of
// tokens tokens on one GPU of a TP x EP MoE group, experts routed by
// distribution ("balanced", "power_law_1.01", ...). A configuration not
// measured is taken from the measured one of the same dtype and
// distribution nearest in (log hidden, log per-GPU width, log local
// experts, log top-k), scaled by the per-GPU work (hidden x width x
// top-k over the GPU's share of experts).
func (k *Kernels) MoE(dtype, distribution string, hidden, inter, topk, experts, tp, ep int, tokens float64) (float64, Fit) {
	key := moeKey{dtype, distribution, hidden, inter, topk, experts, tp, ep}
	if c := k.moe[key]; c != nil {
		return c.at(tokens)
	}
	work := func(c moeKey) float64 {
		return float64(c.hidden) * float64(c.inter) / float64(c.tp) * float64(c.topk) / float64(c.ep)
	}
	lg := func(a, b float64) float64 { return math.Abs(math.Log(a / b)) }
	best, bestD := moeKey{}, math.Inf(1)
	for _, c := range k.moeKeys {
		if c.dtype != dtype || c.dist != distribution {
			continue
		}
		d := lg(float64(c.hidden), float64(hidden)) + lg(float64(c.inter)/float64(c.tp), float64(inter)/float64(tp)) +
			lg(float64(c.experts)/float64(c.ep), float64(experts)/float64(ep)) + lg(float64(c.topk), float64(topk))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if math.IsInf(bestD, 1) {
		return math.NaN(), Uncovered
	}
	t, f := k.moe[best].at(tokens)
	return t * work(key) / work(best), worse(f, Scaled)
}

func (k *Kernels) buildAllReduce(rows []AllReduceRow) {
	type pts struct{ xs, ys []float64 }
	by := map[int]*pts{}
	for _, r := range rows {
		if !r.Graph || r.Dtype != "bfloat16" {
			continue
		}
		p := by[r.GPUs]
		if p == nil {
			p = &pts{}
			by[r.GPUs] = p
		}
		p.xs, p.ys = append(p.xs, float64(r.MessageSize)*2), append(p.ys, r.LatencyMs)
		k.Sources[TableAllReduce] = r.KernelSource
	}
	k.allReduce = map[int]*curve{}
	for g, p := range by {
		c := newCurve(p.xs, p.ys)
		k.allReduce[g] = &c
	}
}

// AllReduce is vLLM's custom all-reduce of sizeBytes of bfloat16 over
// gpus GPUs, as replayed in a CUDA graph (the kernel's time; the eager
// rows add the host's launch, which ftk prices apart). The table's
// message_size counts elements (its bus bandwidth at 16 Mi elements on
// 8 x H100, 280 GB/s, fits NVLink only as 2-byte elements).
func (k *Kernels) AllReduce(gpus int, sizeBytes float64) (float64, Fit) {
	c := k.allReduce[gpus]
	if c == nil {
		return math.NaN(), Uncovered
	}
	return c.at(sizeBytes)
}

// mlaKey is one MLA attention configuration: heads on the GPU, KV dtype.
type mlaKey struct {
	heads   int
	kvDtype string
}

// buildMLA indexes the MLA attention kernel rows (context_mla_perf,
// generation_mla_perf: the kernel alone, not the module tables) by heads
// on the GPU and KV dtype: a grid over (batch, ISL) for context rows,
// (batch, KV length ISL + step) for generation rows. A configuration
// measured at several TP sizes (the same heads per GPU) takes their mean.
func (k *Kernels) buildMLA(rows []MLARow, table string) map[mlaKey]*grid2 {
	total := map[string]int{}
	per := map[mlaKey]map[string]int{}
	for _, r := range rows {
		key := mlaKey{r.Heads, r.KVCacheDtype}
		if per[key] == nil {
			per[key] = map[string]int{}
		}
		per[key][r.KernelSource]++
		total[r.KernelSource]++
	}
	src := map[mlaKey]string{}
	for key, c := range per {
		best := ""
		for s := range c {
			if best == "" || c[s] > c[best] || c[s] == c[best] && s < best {
				best = s
			}
		}
		src[key] = best
	}
	k.Sources[table] = dominant(total)
	type pts struct{ xs, ys, ts []float64 }
	by := map[mlaKey]*pts{}
	for _, r := range rows {
		key := mlaKey{r.Heads, r.KVCacheDtype}
		if r.KernelSource != src[key] {
			continue
		}
		p := by[key]
		if p == nil {
			p = &pts{}
			by[key] = p
		}
		y := float64(r.ISL)
		if !r.Context {
			y = float64(r.ISL + r.Step)
		}
		p.xs, p.ys, p.ts = append(p.xs, float64(r.Batch)), append(p.ys, y), append(p.ts, r.LatencyMs)
	}
	out := map[mlaKey]*grid2{}
	for key, p := range by {
		g := newGrid2(p.xs, p.ys, p.ts)
		out[key] = &g
	}
	return out
}

// mla answers an MLA lookup: the configuration itself, else the measured
// one of the same KV dtype nearest in log heads, scaled by the heads
// ratio.
func mla(grids map[mlaKey]*grid2, key mlaKey, x, y float64) (float64, Fit) {
	if g := grids[key]; g != nil {
		return g.at(x, y)
	}
	best, bestD := mlaKey{}, math.Inf(1)
	for c := range grids {
		if c.kvDtype != key.kvDtype {
			continue
		}
		d := math.Abs(math.Log(float64(c.heads) / float64(key.heads)))
		if d < bestD || d == bestD && c.heads < best.heads {
			best, bestD = c, d
		}
	}
	if math.IsInf(bestD, 1) {
		return math.NaN(), Uncovered
	}
	t, f := grids[best].at(x, y)
	return t * float64(key.heads) / float64(best.heads), worse(f, Scaled)
}

// MLAContext is the MLA prefill attention kernel of batch sequences of
// isl tokens with heads query heads on the GPU, KV cache in kvDtype.
func (k *Kernels) MLAContext(kvDtype string, heads int, batch, isl float64) (float64, Fit) {
	return mla(k.mlaCtx, mlaKey{heads, kvDtype}, batch, isl)
}

// MLAGeneration is the MLA decode attention kernel of batch sequences
// each attending over kvLen cached tokens.
func (k *Kernels) MLAGeneration(kvDtype string, heads int, batch, kvLen float64) (float64, Fit) {
	return mla(k.mlaGen, mlaKey{heads, kvDtype}, batch, kvLen)
}
