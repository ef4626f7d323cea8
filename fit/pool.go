package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// condition is one part of an operator key beyond the operator and the
// measurement type: a pooled forest splits on it as a feature.
type condition struct {
	name string
	num  func(k spec.OpKey) float64 // numeric conditions
	str  func(k spec.OpKey) string  // categorical ones (coded by sorted rank)
}

// keyConditions are the conditions a key can carry (spec.OpKey).
var keyConditions = []condition{
	{name: "tp", num: func(k spec.OpKey) float64 { return float64(k.TP) }},
	{name: "ep", num: func(k spec.OpKey) float64 { return float64(k.EP) }},
	{name: "local_experts", num: func(k spec.OpKey) float64 { return float64(k.LocalExperts) }},
	{name: "gating_context", str: func(k spec.OpKey) string { return k.GatingContext }},
	{name: "routing_path", str: func(k spec.OpKey) string { return k.RoutingPath }},
	{name: "workers", num: func(k spec.OpKey) float64 { return float64(k.Workers) }},
	{name: "cross_node", num: func(k spec.OpKey) float64 {
		if k.CrossNode {
			return 1
		}
		return 0
	}},
}

// conditionFeatures returns the names of the conditions the keys differ in
// and, per key, its values of them (categories coded by their rank among
// the keys' values).
func conditionFeatures(keys []spec.OpKey) ([]string, [][]float64) {
	var names []string
	vals := make([][]float64, len(keys))
	for _, c := range keyConditions {
		col := make([]float64, len(keys))
		if c.str != nil {
			var cats []string
			for _, k := range keys {
				cats = append(cats, c.str(k))
			}
			slices.Sort(cats)
			cats = slices.Compact(cats)
			for i, k := range keys {
				col[i] = float64(slices.Index(cats, c.str(k)))
			}
		} else {
			for i, k := range keys {
				col[i] = c.num(k)
			}
		}
		if slices.Min(col) == slices.Max(col) {
			continue
		}
		names = append(names, c.name)
		for i := range keys {
			vals[i] = append(vals[i], col[i])
		}
	}
	return names, vals
}

// families groups the keys with positive rows by operator, in key order.
func families(kfs []*keyFit) [][]*keyFit {
	var out [][]*keyFit
	at := map[string]int{}
	for _, kf := range kfs {
		if kf.zero {
			continue
		}
		op := kf.si.key.Op
		i, ok := at[op]
		if !ok {
			i = len(out)
			at[op] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], kf)
	}
	return out
}

// pooledCandidates is the search of a pooled forest: log time (the keys'
// fallbacks differ, so no common ratio), two leaf sizes.
func pooledCandidates(trees int, seed uint64) []bundle.SearchResult {
	return []bundle.SearchResult{
		{Target: bundle.TargetLog, Params: bundle.ForestParams{Trees: trees, MaxDepth: maxDepth, MinLeaf: 1, MaxFeatures: 1, Seed: seed}},
		{Target: bundle.TargetLog, Params: bundle.ForestParams{Trees: trees, MaxDepth: maxDepth, MinLeaf: 3, MaxFeatures: 1, Seed: seed}},
	}
}

// pooledRows stacks the rows of the keys (part picks train, hold or every
// row of each) with the keys' condition values appended to the features.
func pooledRows(fam []*keyFit, vals [][]float64, part func(kf *keyFit) []Row, keep func(i, j int) bool) (x [][]float64, y []float64) {
	for i, kf := range fam {
		for j, r := range part(kf) {
			if keep != nil && !keep(i, j) {
				continue
			}
			x = append(x, append(slices.Clip(r.X), vals[i]...))
			y = append(y, math.Log(r.TimeMs))
		}
	}
	return x, y
}

func trainPart(kf *keyFit) []Row { return kf.train }
func allPart(kf *keyFit) []Row   { return kf.rows }

// pooledSearch cross-validates the pooled candidates on the keys' training
// rows, every key keeping its own folds and answering beyond the domain of
// its rows outside the fold as its predictor would, and returns the best
// candidate with its out-of-fold predictions per extrapolation and key.
func pooledSearch(fam []*keyFit, vals [][]float64, opt Options) (bundle.SearchResult, [][][]float64, error) {
	seed := keySeed(opt.Seed, "pooled "+fam[0].si.key.Op)
	var best bundle.SearchResult
	var bestPred [][][]float64
	bestMAPE := math.Inf(1)
	for _, c := range pooledCandidates(opt.Trees, seed) {
		pred := make([][][]float64, len(extrapolations))
		for e := range pred {
			pred[e] = make([][]float64, len(fam))
			for i, kf := range fam {
				pred[e][i] = make([]float64, len(kf.train))
				for j := range pred[e][i] {
					pred[e][i][j] = math.NaN()
				}
			}
		}
		for f := 0; f < opt.Folds; f++ {
			x, y := pooledRows(fam, vals, trainPart, func(i, j int) bool { return fam[i].folds[j] != f })
			if len(x) == 0 {
				continue
			}
			forest, err := trainForest(x, y, c.Params, opt.Workers)
			if err != nil {
				return best, nil, fmt.Errorf("pooled %s: %w", fam[0].si.key.Op, err)
			}
			for i, kf := range fam {
				if f >= len(kf.foldFits) {
					continue
				}
				ff := kf.foldFits[f]
				predict := func(x []float64) float64 { return math.Exp(forest.Predict(append(slices.Clip(x), vals[i]...))) }
				for j, r := range kf.train {
					if kf.folds[j] == f {
						for e, mode := range extrapolations {
							pred[e][i][j] = ff.within(r.X, mode, predict)
						}
					}
				}
			}
		}
		for e := range extrapolations {
			var sum float64
			var n int
			for i, kf := range fam {
				for j, r := range kf.train {
					if math.IsNaN(pred[e][i][j]) {
						sum = math.Inf(1)
					}
					sum += math.Abs(pred[e][i][j]-r.TimeMs) / r.TimeMs
					n++
				}
			}
			if m := sum / float64(n); m < bestMAPE || bestPred == nil {
				best, bestPred, bestMAPE = c, pred, m
			}
		}
	}
	return best, bestPred, nil
}

// fitFamily decides, key by key, between a forest of the key's own, the
// forest pooled over the operator's keys (their conditions as features)
// and the fallback alone, by cross-validated error on the key's rows; then
// scores the choice on the holdout and trains the final models.
func fitFamily(fam []*keyFit, opt Options) (bundle.ConditionChoice, error) {
	keys := make([]spec.OpKey, len(fam))
	for i, kf := range fam {
		keys[i] = kf.si.key
	}
	conds, vals := conditionFeatures(keys)
	choice := bundle.ConditionChoice{Op: keys[0].Op, Conditions: conds, Keys: len(fam)}
	if conds == nil {
		choice.Conditions = []string{}
	}
	var pc bundle.SearchResult
	var ppred [][][]float64
	if len(fam) >= 2 && len(conds) > 0 {
		var err error
		if pc, ppred, err = pooledSearch(fam, vals, opt); err != nil {
			return choice, err
		}
	}
	var holdForest, finalForest *bundle.Forest
	pooledForest := func(part func(*keyFit) []Row) (*bundle.Forest, error) {
		x, y := pooledRows(fam, vals, part, nil)
		return trainForest(x, y, pc.Params, opt.Workers)
	}
	// One extrapolation for the operator: which answers beyond a sweep's
	// edge better is the kernel's physics against its fallback's, and a
	// thin key (7 shapes: 2 edge shapes in CV) cannot tell on its own.
	few := fewShapeKeys(fam, opt)
	choice.FewShapeKeys = len(few)
	sharedCandidate(fam, few, opt)
	mode := familyExtrapolation(fam, ppred)
	choice.Extrapolation = mode
	choice.FewShapesModel = sharedModel(fam, few, ppred, mode)
	for i, kf := range fam {
		m := kf.meta
		// Every model with every extrapolation, with its out-of-fold
		// predictions; the least CV error with the operator's
		// extrapolation answers.
		var preds [][]float64
		add := func(model, target, mode string, pred []float64) {
			m.Choices = append(m.Choices, bundle.ModelChoice{Model: model, Target: target, Extrapolation: mode, CVMAPE: kf.cvOf(pred)})
			preds = append(preds, pred)
		}
		var owns []*bundle.SearchResult
		for e, ext := range extrapolations {
			if kf.ownBy != nil && kf.ownBy[e] != nil {
				add(bundle.ModelForest, kf.ownBy[e].Target, ext, kf.ownPredBy[e])
				owns = append(owns, kf.ownBy[e])
			}
		}
		for e, ext := range extrapolations {
			if ppred != nil {
				add(bundle.ModelPooled, pc.Target, ext, ppred[e][i])
				owns = append(owns, nil)
			}
		}
		at := -1
		for e, ext := range extrapolations {
			if ext == mode {
				at = len(m.Choices) // the fallback when nothing validates
			}
			add(bundle.ModelFallback, bundle.TargetLogRatio, ext, kf.fbPred[e])
			owns = append(owns, nil)
		}
		best := math.Inf(1)
		for _, shared := range []bool{true, false} {
			if shared && (!slices.Contains(few, i) || choice.FewShapesModel == "") {
				continue
			}
			for c, ch := range m.Choices {
				if ch.Extrapolation == mode && (!shared || ch.Model == choice.FewShapesModel) && ch.CVMAPE < best {
					best, at = ch.CVMAPE, c
				}
			}
			if !math.IsInf(best, 1) {
				break
			}
		}
		kf.own = owns[at]
		m.Model, m.Extrapolation = m.Choices[at].Model, m.Choices[at].Extrapolation
		m.CV = errorStats(preds[at], kf.train)
		if kf.ownBy == nil {
			m.Note = thinNote(kf, opt, m, len(fam))
		}
		var final *bundle.Model
		var err error
		switch m.Model {
		case bundle.ModelForest:
			m.Params = kf.own.Params
			choice.Forest++
			if len(kf.hold) > 0 {
				hm, err := trainModel(kf.si, kf.train, kf.own.Target, kf.own.Params, opt.Workers)
				if err != nil {
					return choice, err
				}
				m.Holdout = kf.holdoutStats(hm.Fallback(), hm.FloorMs(), mode, hm.Predict)
			}
			final, err = trainModel(kf.si, kf.rows, kf.own.Target, kf.own.Params, opt.Workers)
		case bundle.ModelPooled:
			m.Params = pc.Params
			choice.Pooled++
			if len(kf.hold) > 0 {
				if holdForest == nil {
					if holdForest, err = pooledForest(trainPart); err != nil {
						return choice, err
					}
				}
				hm, err := kf.fallbackModel(kf.train)
				if err != nil {
					return choice, err
				}
				m.Holdout = kf.holdoutStats(hm.Fallback(), hm.FloorMs(), mode, func(x []float64) float64 { return math.Exp(holdForest.Predict(append(slices.Clip(x), vals[i]...))) })
			}
			if finalForest == nil {
				if finalForest, err = pooledForest(allPart); err != nil {
					return choice, err
				}
			}
			var fbm *bundle.Model
			if fbm, err = kf.fallbackModel(kf.rows); err == nil {
				final = bundle.NewModel(bundle.TargetLog, fbm.Fallback(), fbm.FloorMs(), bundle.ForestFeatures(kf.si.key.Op),
					specialize(finalForest, len(kf.si.names), vals[i]))
			}
			m.Pooled = &bundle.Pooled{Conditions: conds, Values: vals[i], Keys: keys, Target: pc.Target, Params: pc.Params}
			for _, o := range fam {
				m.Pooled.Rows += len(o.rows)
			}
		default:
			m.Params = bundle.ForestParams{Trees: 1, MaxDepth: 1, MinLeaf: 1, MaxFeatures: 1}
			choice.Fallback++
			if len(kf.hold) > 0 {
				hm, err := kf.fallbackModel(kf.train)
				if err != nil {
					return choice, err
				}
				m.Holdout = kf.holdoutStats(hm.Fallback(), hm.FloorMs(), mode, hm.Predict)
			}
			final, err = kf.fallbackModel(kf.rows)
		}
		if err != nil {
			return choice, err
		}
		target := bundle.TargetLogRatio
		switch m.Model {
		case bundle.ModelForest:
			target = kf.own.Target
		case bundle.ModelPooled:
			target = pc.Target
		}
		if err := kf.finish(final, target); err != nil {
			return choice, err
		}
	}
	return choice, nil
}

// thinNote says why a key has no forest of its own and what answers it.
func thinNote(kf *keyFit, opt Options, m *bundle.PredictorMeta, famKeys int) string {
	_, n := shapes(kf.rows)
	var alts []string
	for _, c := range m.Choices {
		alts = append(alts, fmt.Sprintf("%s/%s cv %s", c.Model, c.Extrapolation, pctNaN(c.CVMAPE)))
	}
	why := fmt.Sprintf("thin key: %d rows of %d shapes, fewer than the %d shapes a forest of its own needs", len(kf.all), n, opt.MinShapes)
	if famKeys < 2 {
		why += fmt.Sprintf(" and no other %s key to pool with", kf.si.key.Op)
	}
	return fmt.Sprintf("%s; answered by the %s, extrapolating by %s (%s)", why, m.Model, m.Extrapolation, strings.Join(alts, ", "))
}

func pctNaN(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", v)
}

// specialize returns the forest f (on d base features followed by the
// condition features) with the conditions fixed at cond: every split on a
// condition is resolved, leaving a forest on the base features that
// predicts exactly what f predicts at cond.
func specialize(f *bundle.Forest, d int, cond []float64) *bundle.Forest {
	out := &bundle.Forest{NFeat: d, Roots: make([]int32, len(f.Roots))}
	resolve := func(i int32) int32 {
		for {
			n := f.Nodes[i]
			if int(n.Feat) < d {
				return i
			}
			if cond[int(n.Feat)-d] <= n.Thr {
				i = n.Left
			} else {
				i = n.Left + 1
			}
		}
	}
	var emit func(src, at int32)
	emit = func(src, at int32) {
		n := f.Nodes[resolve(src)]
		if n.Feat < 0 {
			out.Nodes[at] = n
			return
		}
		left := int32(len(out.Nodes))
		out.Nodes = append(out.Nodes, bundle.Node{}, bundle.Node{})
		out.Nodes[at] = bundle.Node{Thr: n.Thr, Feat: n.Feat, Left: left}
		emit(n.Left, left)
		emit(n.Left+1, left+1)
	}
	for t, r := range f.Roots {
		at := int32(len(out.Nodes))
		out.Nodes = append(out.Nodes, bundle.Node{})
		out.Roots[t] = at
		emit(r, at)
	}
	return out
}
