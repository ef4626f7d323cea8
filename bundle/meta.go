package bundle

import (
	"fmt"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// SchemaVersion is the version of the bundle layout (node table columns and
// metadata). Load refuses other versions.
const SchemaVersion = 7

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
	// ProfilingBackends are where the training rows' timings came from
	// (spec.Profile*: synthetic, torch-cpu, gpu), sorted: a bundle fitted
	// on synthetic rows predicts the roofline device model, not a GPU.
	ProfilingBackends []string `json:"profiling_backends"`
	// KernelSources are the kernels behind the training rows (the
	// dataset's kernel_source; spec.KernelOrigin reads each), sorted:
	// empty when the profiles record none. A bundle fitted on plain
	// PyTorch rows ("torch:...") does not predict vLLM's kernels.
	KernelSources []string `json:"kernel_sources,omitempty"`
	// MeasuredAt are the engine limits the training rows were collected
	// at (nil: not recorded, a third-party profile) and BlockSizes the
	// KV-cache block sizes of their attention rows; simulate compares its
	// own with them.
	MeasuredAt *spec.EngineLimits `json:"engine_limits,omitempty"`
	BlockSizes []int              `json:"block_sizes,omitempty"`
	// DataChecksum identifies the training data (the profile dataset's
	// checksum).
	DataChecksum string `json:"training_data_checksum"`
	// PhysicsModel is the architecture whose operator shapes the fallbacks
	// use ("" when none was known).
	PhysicsModel    string  `json:"physics_model"`
	Seed            uint64  `json:"seed"`
	Folds           int     `json:"cv_folds"`
	HoldoutFraction float64 `json:"holdout_fraction"`
	// Repeats is the repeat policy (RepeatsAll or RepeatsMedian) and
	// DisagreeRatio the spread of one shape's measurements beyond which
	// they are reported as disagreeing sweeps (all are kept).
	Repeats       string  `json:"repeats"`
	DisagreeRatio float64 `json:"disagree_ratio"`
	// MinShapes is the fewest distinct shapes a key needs for a forest of
	// its own; keys with fewer get a pooled forest or the fallback.
	MinShapes int `json:"min_shapes"`
	// Conditions records, per operator, the key conditions its keys differ
	// in and how cross-validation decided each key: a forest of its own
	// (the conditions split predictors), the pooled forest (they are
	// features of one forest) or the fallback.
	Conditions []ConditionChoice `json:"conditions"`
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
	// KernelSources are the kernels behind the key's rows, sorted.
	KernelSources []string `json:"kernel_sources,omitempty"`
	// Target is what the forest learns (TargetLogRatio, TargetLog or
	// TargetRaw) and FloorMs the lower bound of the fallback inside a
	// log-ratio target.
	Target  string  `json:"target"`
	FloorMs float64 `json:"floor_ms"`
	// Domain is the sampled range of every feature, with the distinct
	// sampled values (for gap checks).
	Domain []FeatureDomain `json:"domain"`
	// Rows are the key's rows in the dataset; TrainRows those trained on
	// (every positive time, or one median per shape with RepeatsMedian).
	Rows      int       `json:"rows"`
	TrainRows int       `json:"train_rows"`
	Dropped   []Dropped `json:"dropped"`
	// Model is what answers in the domain: ModelForest, ModelPooled,
	// ModelFallback or ModelZero, chosen by cross-validation among
	// Choices; Note says why when the key is thin.
	Model   string        `json:"model"`
	Note    string        `json:"note,omitempty"`
	Choices []ModelChoice `json:"model_choices"`
	// Extrapolation is what answers beyond the domain (an Extrapolate
	// constant), chosen with Model.
	Extrapolation string `json:"extrapolation"`
	// Pooled describes the pooled forest when Model is ModelPooled.
	Pooled *Pooled `json:"pooled,omitempty"`
	// Repeats describes repeated measurements (noise floor, disagreeing
	// sweeps); Groups compares each sweep group with PrimaryGroup.
	Repeats      Repeats      `json:"repeats"`
	PrimaryGroup string       `json:"primary_group,omitempty"`
	Groups       []GroupRatio `json:"groups,omitempty"`
	// Params are the chosen hyperparameters, Search every candidate with
	// its cross-validated error on the non-held-out rows.
	Params ForestParams   `json:"hyperparameters"`
	Search []SearchResult `json:"search"`
	// CV is the k-fold cross-validated error of the chosen candidate on
	// the non-held-out rows; Holdout the error on the held-out rows of a
	// model trained on the others; FallbackCV the cross-validated error of
	// the physical fallback alone (the extrapolation model).
	// AllRows is the error of the final predictor on every positive row
	// of the key in the dataset, nothing left out. CV folds and the
	// holdout group the repeats of a shape.
	AllRows    ErrorStats `json:"all_rows"`
	CV         ErrorStats `json:"cv"`
	Holdout    ErrorStats `json:"holdout"`
	FallbackCV ErrorStats `json:"fallback_cv"`
	Fallback   Fallback   `json:"fallback"`
	Nodes      int        `json:"nodes"`
	// Measured are the distinct shapes of the key's rows of positive time,
	// each with the median of its measurements: the predictor answers them
	// with that (MeasuredShape), so AllRows is the spread of the repeats
	// around their median and CV the error on shapes never measured.
	Measured []MeasuredShape `json:"measured"`
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
	Target        string       `json:"target"`
	Params        ForestParams `json:"hyperparameters"`
	Extrapolation string       `json:"extrapolation,omitempty"`
	CVMAPE        float64      `json:"cv_mape_pct"`
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
	// Lines are the first source lines of the dropped rows.
	Lines []string `json:"lines"`
}

// PrimaryGroup is the sweep group every other group of a predictor is
// compared with: single-sequence shapes.
const PrimaryGroup = "pure"

// DropZero: rows of 0 ms among positive times (a failed measurement) are
// the only rows fit leaves out of training.
const DropZero = "zero_time"

// String says what was left out and why, for people.
func (d Dropped) String() string {
	return fmt.Sprintf("left out %d rows of group %q (%s): 0 ms among positive times", d.Rows, d.Group, strings.Join(d.Lines, ", "))
}
