package bundle

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// SchemaVersion is the version of the bundle layout (node table columns and
// metadata). Load refuses other versions.
const SchemaVersion = 1

// Format identifies an ftk model bundle.
const Format = "ftk-model-bundle"

// Meta is the bundle's self-description, stored as JSON in the Arrow
// schema metadata under "ftk.bundle".
type Meta struct {
	Format        string `json:"format"`
	SchemaVersion int    `json:"schema_version"`
	Device        string `json:"device"`
	Model         string `json:"model"`
	Measurement   string `json:"measurement_type"`
	// DataChecksum identifies the training data (the profile dataset's
	// checksum).
	DataChecksum string `json:"training_data_checksum"`
	// PhysicsModel is the architecture whose operator shapes the fallbacks
	// use ("" when none was known).
	PhysicsModel    string  `json:"physics_model"`
	Seed            uint64  `json:"seed"`
	Folds           int     `json:"cv_folds"`
	HoldoutFraction float64 `json:"holdout_fraction"`
	ConflictRatio   float64 `json:"conflict_ratio"`
	// Prediction says how predictors are evaluated at run time.
	Prediction string          `json:"prediction"`
	Predictors []PredictorMeta `json:"predictors"`
}

// PredictorMeta describes one predictor: what it was trained on, how, and
// how well it does.
type PredictorMeta struct {
	Key spec.OpKey `json:"key"`
	// Features are the query features (spec.OpFeatures order);
	// ForestFeatures those the forest splits on.
	Features       []string `json:"features"`
	ForestFeatures []string `json:"forest_features"`
	// Target is what the forest learns (TargetLogRatio, TargetLog or
	// TargetRaw) and FloorMs the lower bound of the fallback inside a
	// log-ratio target.
	Target  string  `json:"target"`
	FloorMs float64 `json:"floor_ms"`
	// Domain is the sampled range of every feature, with the distinct
	// sampled values (for gap checks).
	Domain  []FeatureDomain `json:"domain"`
	Rows    int             `json:"rows"`
	Dropped []Dropped       `json:"dropped"`
	// Params are the chosen hyperparameters, Search every candidate with
	// its cross-validated error on the non-held-out rows.
	Params ForestParams   `json:"hyperparameters"`
	Search []SearchResult `json:"search"`
	// CV is the k-fold cross-validated error of the chosen candidate on
	// the non-held-out rows; Holdout the error on the held-out rows of a
	// model trained on the others; FallbackCV the cross-validated error of
	// the physical fallback alone (the extrapolation model).
	CV         ErrorStats `json:"cv"`
	Holdout    ErrorStats `json:"holdout"`
	FallbackCV ErrorStats `json:"fallback_cv"`
	Fallback   Fallback   `json:"fallback"`
	Nodes      int        `json:"nodes"`
}

// FeatureDomain is the sampled range of one feature.
type FeatureDomain struct {
	Name string  `json:"name"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	// Values are the distinct sampled values, sorted (at most
	// maxDomainValues; evenly thinned beyond).
	Values []float64 `json:"values"`
}

// SearchResult is one hyperparameter candidate and its CV error.
type SearchResult struct {
	Target string       `json:"target"`
	Params ForestParams `json:"hyperparameters"`
	CVMAPE float64      `json:"cv_mape_pct"`
}

// ErrorStats summarise absolute percentage errors.
type ErrorStats struct {
	// Rows is the number of rows scored (rows of 0 ms have no percentage
	// error).
	Rows int `json:"rows"`
	// MAPE is the mean absolute percentage error, in percent.
	MAPE float64 `json:"mape_pct"`
	P50  float64 `json:"p50_ape_pct"`
	P90  float64 `json:"p90_ape_pct"`
	Max  float64 `json:"max_ape_pct"`
}

// Dropped records rows left out of a predictor, and why.
type Dropped struct {
	Reason string `json:"reason"`
	Group  string `json:"group"`
	Rows   int    `json:"rows"`
	// Ratio is the median over the dropped rows of their time divided by
	// what was kept (the fastest duplicate, or the primary group's model);
	// NaN (null in JSON) when no row could be compared.
	Ratio float64 `json:"median_ratio"`
	// Lines are the first source lines of the dropped rows.
	Lines []string `json:"lines"`
}

// PrimaryGroup is the sweep group every other group of a predictor is
// checked against: single-sequence shapes.
const PrimaryGroup = "pure"

// Drop reasons.
const (
	// DropDuplicate: a sample more than ConflictRatio slower than the
	// fastest sample of the same shape.
	DropDuplicate = "conflicting_duplicate"
	// DropGroup: a group (variant) whose times disagree with the primary
	// group's model by more than ConflictRatio, or cannot be checked.
	DropGroup = "inconsistent_group"
	// DropZero: rows of 0 ms among positive times (a failed measurement).
	DropZero = "zero_time"
)

// String says what was dropped and why, for people.
func (d Dropped) String() string {
	what := fmt.Sprintf("%d rows of group %q (%s)", d.Rows, d.Group, strings.Join(d.Lines, ", "))
	switch {
	case d.Reason == DropZero:
		return fmt.Sprintf("dropped %s: 0 ms among positive times", what)
	case d.Reason == DropDuplicate:
		return fmt.Sprintf("dropped %s: repeated shapes %.2fx slower than the fastest measurement of the same shape", what, d.Ratio)
	case math.IsNaN(d.Ratio):
		return fmt.Sprintf("dropped %s: no row inside the %q group's domain to check it against", what, PrimaryGroup)
	}
	return fmt.Sprintf("dropped %s: %.2fx the time the %q rows predict for the same features", what, d.Ratio, PrimaryGroup)
}

// MarshalJSON writes a NaN ratio as null.
func (d Dropped) MarshalJSON() ([]byte, error) {
	type plain Dropped
	var ratio *float64
	if !math.IsNaN(d.Ratio) {
		ratio = &d.Ratio
	}
	return json.Marshal(struct {
		plain
		Ratio *float64 `json:"median_ratio"`
	}{plain(d), ratio})
}

// UnmarshalJSON reads a null ratio as NaN.
func (d *Dropped) UnmarshalJSON(b []byte) error {
	type plain Dropped
	var v struct {
		plain
		Ratio *float64 `json:"median_ratio"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Dropped(v.plain)
	d.Ratio = math.NaN()
	if v.Ratio != nil {
		d.Ratio = *v.Ratio
	}
	return nil
}
