package fit

import (
	"github.com/ftk-dev/ftk/spec"
)

// SchemaVersion is the version of the bundle layout (node table columns and
// metadata). LoadBundle refuses other versions.
const SchemaVersion = 1

// BundleFormat identifies an ftk model bundle.
const BundleFormat = "ftk-model-bundle"

// BundleMeta is the bundle's self-description, stored as JSON in the Arrow
// schema metadata under "ftk.bundle".
type BundleMeta struct {
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

// maxDomainValues bounds the sampled values kept per feature.
const maxDomainValues = 1024

// SearchResult is one hyperparameter candidate and its CV error.
type SearchResult struct {
	Target string       `json:"target"`
	Params ForestParams `json:"hyperparameters"`
	CVMAPE float64      `json:"cv_mape_pct"`
}

// featureDomains computes the domain of rows.
func featureDomains(names []string, rows []Row) []FeatureDomain {
	out := make([]FeatureDomain, len(names))
	for j, n := range names {
		vals := make([]float64, len(rows))
		for i, r := range rows {
			vals[i] = r.X[j]
		}
		sortFloats(vals)
		uniq := vals[:0]
		for i, v := range vals {
			if i == 0 || v != uniq[len(uniq)-1] {
				uniq = append(uniq, v)
			}
		}
		if len(uniq) > maxDomainValues {
			thin := make([]float64, 0, maxDomainValues)
			for k := 0; k < maxDomainValues; k++ {
				thin = append(thin, uniq[k*(len(uniq)-1)/(maxDomainValues-1)])
			}
			uniq = thin
		}
		out[j] = FeatureDomain{Name: n, Min: uniq[0], Max: uniq[len(uniq)-1], Values: append([]float64(nil), uniq...)}
	}
	return out
}
