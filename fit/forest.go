package fit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/ftk-dev/ftk/bundle"
)

// validateParams checks forest hyperparameters.
func validateParams(p bundle.ForestParams) error {
	switch {
	case p.Trees < 1:
		return fmt.Errorf("forest: trees must be at least 1, got %d", p.Trees)
	case p.MaxDepth < 1:
		return fmt.Errorf("forest: max depth must be at least 1, got %d", p.MaxDepth)
	case p.MinLeaf < 1:
		return fmt.Errorf("forest: min leaf must be at least 1, got %d", p.MinLeaf)
	case !(p.MaxFeatures > 0 && p.MaxFeatures <= 1):
		return fmt.Errorf("forest: max features must be in (0, 1], got %g", p.MaxFeatures)
	}
	return nil
}

// trainForest grows p.Trees trees on rows x (row-major) with targets y,
// using up to workers goroutines. The result depends only on the inputs
// and p.Seed.
func trainForest(x [][]float64, y []float64, p bundle.ForestParams, workers int) (*bundle.Forest, error) {
	if err := validateParams(p); err != nil {
		return nil, err
	}
	if len(x) == 0 || len(x) != len(y) {
		return nil, fmt.Errorf("forest: %d rows and %d targets", len(x), len(y))
	}
	d := len(x[0])
	bd := binColumns(x, d)
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	trees := make([][]bundle.Node, p.Trees)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(workers, p.Trees); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newTreeGrower(bd, y, d, p)
			for t := range next {
				trees[t] = g.grow(rand.New(rand.NewPCG(p.Seed, uint64(t)+1)))
			}
		}()
	}
	for t := range trees {
		next <- t
	}
	close(next)
	wg.Wait()
	total := 0
	for _, tr := range trees {
		total += len(tr)
	}
	f := &bundle.Forest{NFeat: d, Roots: make([]int32, len(trees)), Nodes: make([]bundle.Node, 0, total)}
	for t, tr := range trees {
		base := int32(len(f.Nodes))
		f.Roots[t] = base
		for _, n := range tr {
			if n.Feat >= 0 {
				n.Left += base
			}
			f.Nodes = append(f.Nodes, n)
		}
	}
	return f, nil
}

// treeGrower holds the scratch space of one worker.
type treeGrower struct {
	bd   *binnedData
	y    []float64
	d    int
	p    bundle.ForestParams
	mtry int

	idx   []int32 // bootstrap rows, partitioned in place node by node
	feats []int
	cnt   [maxBins]float64
	sum   [maxBins]float64
	nodes []bundle.Node
	stack []span
}

func newTreeGrower(bd *binnedData, y []float64, d int, p bundle.ForestParams) *treeGrower {
	mtry := int(math.Round(p.MaxFeatures * float64(d)))
	mtry = max(1, min(d, mtry))
	feats := make([]int, d)
	for i := range feats {
		feats[i] = i
	}
	return &treeGrower{bd: bd, y: y, d: d, p: p, mtry: mtry, idx: make([]int32, len(y)), feats: feats}
}

type span struct {
	lo, hi int
	depth  int
	at     int32 // index of the node to fill
}

// grow builds one tree on a bootstrap sample drawn with r.
func (g *treeGrower) grow(r *rand.Rand) []bundle.Node {
	n := len(g.y)
	for i := range g.idx {
		g.idx[i] = int32(r.IntN(n))
	}
	// The feature order is permuted in place per split: start every tree
	// from the same order, whatever this worker grew before.
	for i := range g.feats {
		g.feats[i] = i
	}
	g.nodes = make([]bundle.Node, 1, 2*n+1)
	stack := append(g.stack[:0], span{0, n, 0, 0})
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, bin, thr, mean, ok := g.bestSplit(s, r)
		if !ok {
			g.nodes[s.at] = bundle.Node{Thr: mean, Feat: -1}
			continue
		}
		mid := g.partition(s.lo, s.hi, f, bin)
		left := int32(len(g.nodes))
		g.nodes = append(g.nodes, bundle.Node{}, bundle.Node{})
		g.nodes[s.at] = bundle.Node{Thr: thr, Feat: int32(f), Left: left}
		stack = append(stack, span{mid, s.hi, s.depth + 1, left + 1}, span{s.lo, mid, s.depth + 1, left})
	}
	g.stack = stack
	return g.nodes
}

// bestSplit finds the split of span s with the largest reduction of the
// squared error among mtry randomly drawn features. It returns the mean
// target of the span as well, for a leaf.
func (g *treeGrower) bestSplit(s span, r *rand.Rand) (feat, bin int, thr, mean float64, ok bool) {
	n := s.hi - s.lo
	var tot, lo, hi float64
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, i := range g.idx[s.lo:s.hi] {
		v := g.y[i]
		tot += v
		lo, hi = min(lo, v), max(hi, v)
	}
	mean = tot / float64(n)
	minLeaf := g.p.MinLeaf
	if s.depth >= g.p.MaxDepth || n < 2*minLeaf || hi-lo <= 1e-12*math.Abs(mean) {
		return 0, 0, 0, mean, false
	}
	base := tot * tot / float64(n)
	best := base * (1 + 1e-12)
	// Partial Fisher-Yates: the first mtry entries become the candidates.
	for k := 0; k < g.mtry; k++ {
		j := k + r.IntN(g.d-k)
		g.feats[k], g.feats[j] = g.feats[j], g.feats[k]
	}
	for _, f := range g.feats[:g.mtry] {
		if len(g.bd.edges[f]) == 0 {
			continue
		}
		// The histogram arrays are all zero between uses; only the bins
		// this node touches are filled, scanned and cleared again.
		bins := g.bd.bins[f]
		bmin, bmax := maxBins, 0
		for _, i := range g.idx[s.lo:s.hi] {
			b := int(bins[i])
			g.cnt[b]++
			g.sum[b] += g.y[i]
			bmin, bmax = min(bmin, b), max(bmax, b)
		}
		var cl, sl float64
		for b := bmin; b < bmax; b++ {
			if g.cnt[b] == 0 {
				continue
			}
			cl += g.cnt[b]
			sl += g.sum[b]
			if int(cl) < minLeaf {
				continue
			}
			cr := float64(n) - cl
			if int(cr) < minLeaf {
				break
			}
			sr := tot - sl
			if gain := sl*sl/cl + sr*sr/cr; gain > best {
				best, feat, bin, ok = gain, f, b, true
				next := b + 1
				for g.cnt[next] == 0 {
					next++
				}
				thr = midpoint(g.bd.hi[f][b], g.bd.lo[f][next])
			}
		}
		clear(g.cnt[bmin : bmax+1])
		clear(g.sum[bmin : bmax+1])
	}
	return feat, bin, thr, mean, ok
}

// partition reorders idx[lo:hi] so rows with bin <= b in feature f come
// first, and returns the boundary.
func (g *treeGrower) partition(lo, hi, f, b int) int {
	bins := g.bd.bins[f]
	i, j := lo, hi-1
	for i <= j {
		if int(bins[g.idx[i]]) <= b {
			i++
		} else {
			g.idx[i], g.idx[j] = g.idx[j], g.idx[i]
			j--
		}
	}
	return i
}
