package bundle

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Models: what answers a predictor's in-domain queries.
const (
	// ModelForest is a forest trained on the key's own rows.
	ModelForest = "forest"
	// ModelPooled is a forest trained on the rows of every key of the
	// operator, with the conditions the keys differ in as features, fixed
	// at the key's values.
	ModelPooled = "pooled"
	// ModelFallback is the physical fallback alone.
	ModelFallback = "fallback"
	// ModelZero answers 0 ms (every row took 0 ms).
	ModelZero = "zero"
)

// Extrapolations: what a predictor answers beyond its sampled domain,
// chosen per operator by cross-validation over the rows of all its keys
// (folds group shapes, so a fold at the edge of a sweep is predicted from
// beyond the domain of the others).
const (
	// ExtrapolateFallback adds the physical fallback's increment from the
	// nearest in-domain point to the query: growing with the physics.
	ExtrapolateFallback = "fallback_increment"
	// ExtrapolateEdge answers the prediction at the nearest in-domain
	// point, as a plain random forest does: for a kernel whose time steps
	// with tile counts rather than growing with the work.
	ExtrapolateEdge = "edge"
	// ExtrapolateEdgeAbove answers the edge value above the domain and
	// adds the fallback's increment below it: for a kernel whose time
	// levels off past the sweep's top (a fused-MoE GEMM once every expert
	// has tokens) but falls with the work below its bottom.
	ExtrapolateEdgeAbove = "edge_above"
	// ExtrapolateEdgeBelow answers the edge value below the domain and
	// adds the fallback's increment above it: for a kernel at its launch
	// floor at the sweep's bottom that grows with the work past its top.
	ExtrapolateEdgeBelow = "edge_below"
	// ExtrapolateRoof adds the increment of the fallback's roofline shape
	// (Fallback.RoofMs: the intercept plus the largest of its other terms,
	// as roofline.Roofline prices a kernel by the larger of its compute and
	// memory times) instead of the sum: for a kernel whose time stays at
	// its weight stream while its FLOPs grow (a small projection at 64-128
	// tokens), where the summed terms keep growing.
	ExtrapolateRoof = "roof_increment"
)

// Repeat policies: what fit trains on when a shape was measured more than
// once (Meta.Repeats).
const (
	// RepeatsAll trains on every measurement as a sample of its own, as
	// the error on all rows counts them.
	RepeatsAll = "all"
	// RepeatsMedian trains on one row per shape: the median of its
	// measurements.
	RepeatsMedian = "median"
)

// DisagreeRatio is how far apart two measurements of one shape may be
// before fit reports them as disagreeing sweeps: 25%. Both are kept.
const DisagreeRatio = 1.25

// ModelChoice is one model a key could use and its cross-validated error
// on the key's rows (NaN, null in JSON, when it could not be validated).
type ModelChoice struct {
	Model         string  `json:"model"`
	Target        string  `json:"target,omitempty"`
	Extrapolation string  `json:"extrapolation,omitempty"`
	CVMAPE        float64 `json:"cv_mape_pct"`
}

// MarshalJSON writes a NaN error as null.
func (c ModelChoice) MarshalJSON() ([]byte, error) {
	type plain ModelChoice
	return json.Marshal(struct {
		plain
		CVMAPE *float64 `json:"cv_mape_pct"`
	}{plain(c), nullNaN(c.CVMAPE)})
}

// UnmarshalJSON reads a null error as NaN.
func (c *ModelChoice) UnmarshalJSON(b []byte) error {
	type plain ModelChoice
	var v struct {
		plain
		CVMAPE *float64 `json:"cv_mape_pct"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = ModelChoice(v.plain)
	c.CVMAPE = nanNull(v.CVMAPE)
	return nil
}

// Pooled describes a pooled forest: the conditions it splits on besides
// the operator's features, this key's values of them (categories coded by
// their rank among the keys' values), and the keys whose rows it was
// trained on.
type Pooled struct {
	Conditions []string     `json:"conditions"`
	Values     []float64    `json:"values"`
	Keys       []spec.OpKey `json:"keys"`
	Rows       int          `json:"rows"`
	Target     string       `json:"target"`
	Params     ForestParams `json:"hyperparameters"`
}

// ConditionChoice is how one operator's keys were modelled: the
// conditions they differ in, and how many keys cross-validation gave a
// forest of their own, the pooled forest or the fallback.
type ConditionChoice struct {
	Op         string   `json:"op"`
	Conditions []string `json:"conditions"`
	Keys       int      `json:"keys"`
	Forest     int      `json:"own_forest"`
	Pooled     int      `json:"pooled"`
	Fallback   int      `json:"fallback"`
	// Extrapolation is the operator's answer beyond every key's domain
	// (an Extrapolate constant), chosen by CV over the rows of all its
	// keys.
	Extrapolation string `json:"extrapolation"`
	// FewShapeKeys is the number of keys with too few shapes for a holdout
	// (fewer than 2 x min shapes); FewShapesModel the model they all take
	// (own_forest, pooled or fallback, with the forest candidate they share),
	// chosen by CV over their rows together; "" when fewer than two keys
	// decide together and each took its least CV error.
	FewShapeKeys   int    `json:"few_shape_keys"`
	FewShapesModel string `json:"few_shapes_model"`
}

// Repeats describes the repeated measurements of one predictor's shapes:
// how far apart they are, and so how much of the error is the measurement
// itself.
type Repeats struct {
	// Shapes is the number of distinct shapes, Repeated those measured
	// more than once, Rows the rows of repeated shapes.
	Shapes   int `json:"shapes"`
	Repeated int `json:"repeated_shapes"`
	Rows     int `json:"repeated_rows"`
	// NoiseFloorPct is the mean absolute percentage error, over every row,
	// of answering each shape's median: no predictor of one time per shape
	// does much better on all rows. Rows of shapes measured once add 0.
	NoiseFloorPct float64 `json:"noise_floor_pct"`
	// MedianSpread is the median over repeated shapes of slowest/fastest.
	MedianSpread float64 `json:"median_spread"`
	// Disagreeing counts the repeated shapes whose slowest measurement is
	// more than DisagreeRatio times the fastest; DisagreeSpread is their
	// median slowest/fastest ratio and Lines the first of their rows.
	Disagreeing    int      `json:"disagreeing_shapes"`
	DisagreeSpread float64  `json:"disagreeing_median_spread"`
	Lines          []string `json:"disagreeing_lines"`
}

// String says what the repeats are, for people; "" when none.
func (r Repeats) String() string {
	if r.Repeated == 0 {
		return ""
	}
	s := fmt.Sprintf("%d of %d shapes measured more than once (%d rows), median spread %.2fx, noise floor %.2f%%",
		r.Repeated, r.Shapes, r.Rows, r.MedianSpread, r.NoiseFloorPct)
	if r.Disagreeing > 0 {
		s += fmt.Sprintf("; %d shapes' sweeps disagree by more than %.2fx (median %.2fx; %s): all kept",
			r.Disagreeing, DisagreeRatio, r.DisagreeSpread, strings.Join(r.Lines, ", "))
	}
	return s
}

// GroupRatio compares one sweep group (ingest's variant: mixed-batch or
// true-mixed reductions) of a predictor with its primary group. Every group
// is kept; a ratio far from 1 says the group measures something the
// features do not tell apart.
type GroupRatio struct {
	Group string `json:"group"`
	Rows  int    `json:"rows"`
	// Ratio is the median, over the group's rows inside the primary
	// group's domain, of the measured time over the primary group's
	// forest; NaN (null in JSON) when no row lies inside that domain.
	Ratio float64 `json:"median_ratio"`
}

// Describe says how the group compares with the primary one, for people.
func (g GroupRatio) Describe(primary string) string {
	if math.IsNaN(g.Ratio) {
		return fmt.Sprintf("group %q (%d rows): no row inside the %q rows' domain to compare; kept", g.Group, g.Rows, primary)
	}
	return fmt.Sprintf("group %q (%d rows): %.2fx the time the %q rows predict for the same features; kept", g.Group, g.Rows, g.Ratio, primary)
}

// MarshalJSON writes a NaN ratio as null.
func (g GroupRatio) MarshalJSON() ([]byte, error) {
	type plain GroupRatio
	return json.Marshal(struct {
		plain
		Ratio *float64 `json:"median_ratio"`
	}{plain(g), nullNaN(g.Ratio)})
}

// UnmarshalJSON reads a null ratio as NaN.
func (g *GroupRatio) UnmarshalJSON(b []byte) error {
	type plain GroupRatio
	var v struct {
		plain
		Ratio *float64 `json:"median_ratio"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*g = GroupRatio(v.plain)
	g.Ratio = nanNull(v.Ratio)
	return nil
}

// nullNaN is nil for NaN (null in JSON), else a pointer to v.
func nullNaN(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// nanNull is NaN for nil.
func nanNull(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
