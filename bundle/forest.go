package bundle

import "fmt"

// ForestParams are the hyperparameters of one regression random forest.
type ForestParams struct {
	Trees int `json:"trees"`
	// MaxDepth bounds the depth of every tree (root = depth 0).
	MaxDepth int `json:"max_depth"`
	// MinLeaf is the fewest bootstrap samples a leaf may hold.
	MinLeaf int `json:"min_leaf"`
	// MaxFeatures is the fraction of the features drawn as split
	// candidates at each node (at least one).
	MaxFeatures float64 `json:"max_features"`
	// Seed makes the forest reproducible: tree t draws from a generator
	// seeded with (Seed, t), whatever the number of workers.
	Seed uint64 `json:"seed"`
}

// String renders the hyperparameters for people.
func (p ForestParams) String() string {
	return fmt.Sprintf("trees=%d depth<=%d min_leaf=%d max_features=%.2g", p.Trees, p.MaxDepth, p.MinLeaf, p.MaxFeatures)
}

// Node is one node of a flattened tree. An inner node sends x[Feat] <= Thr
// to Left and everything else to Left+1; a leaf has Feat < 0 and holds its
// value in Thr. Children are adjacent so one index addresses both.
type Node struct {
	Thr  float64
	Feat int32
	Left int32
}

// Forest is a trained forest: all trees in one node array, Roots[t] the
// index of tree t's root. Its prediction is the mean of the trees.
type Forest struct {
	Nodes []Node
	Roots []int32
	NFeat int
}

// Predict returns the mean leaf value of the trees for x.
func (f *Forest) Predict(x []float64) float64 {
	var s float64
	nodes := f.Nodes
	for _, r := range f.Roots {
		i := r
		for {
			n := &nodes[i]
			if n.Feat < 0 {
				s += n.Thr
				break
			}
			if x[n.Feat] <= n.Thr {
				i = n.Left
			} else {
				i = n.Left + 1
			}
		}
	}
	return s / float64(len(f.Roots))
}

// thresholds returns, per feature, the sorted distinct split thresholds the
// forest uses.
func (f *Forest) thresholds() [][]float64 {
	set := make([]map[float64]bool, f.NFeat)
	for i := range set {
		set[i] = map[float64]bool{}
	}
	for _, n := range f.Nodes {
		if n.Feat >= 0 {
			set[n.Feat][n.Thr] = true
		}
	}
	out := make([][]float64, f.NFeat)
	for i, s := range set {
		for v := range s {
			out[i] = append(out[i], v)
		}
		sortFloats(out[i])
	}
	return out
}
