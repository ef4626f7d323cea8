package dataset

import (
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Schema metadata keys of a dataset's Arrow files.
const (
	MetaKind          = "ftk.kind"
	MetaSchemaVersion = "ftk.schema_version"
	MetaFamily        = "ftk.family"
	MetaMeasurement   = "ftk.measurement_type"
	MetaDevice        = "ftk.device"
	MetaOpFeatures    = "ftk.op_features" // JSON: operator -> feature columns
)

// FamilyFeatures are the feature columns of each family's file: the union
// of spec.OpFeatures of its operators. A sample fills the columns of its
// operator's features; the others are null.
var FamilyFeatures = map[spec.Family][]string{
	spec.FamilyLinear:     {spec.FeatNumTokens},
	spec.FamilyAttention:  {spec.FeatNumTokens, spec.FeatBatchSize, spec.FeatKVCacheSize, spec.FeatPrefillChunkSize},
	spec.FamilyMoE:        {spec.FeatNumTokens, spec.FeatTotalRoutedTokens, spec.FeatMaxExpertTokens},
	spec.FamilyCollective: {spec.FeatSizeBytes},
	spec.FamilyCPU:        {spec.FeatBatchSize, spec.FeatNumPrefillTokens, spec.FeatNumDecodeTokens},
}

// Column names of the canonical long schema (besides features and extras).
const (
	ColOp            = "op"
	ColMeasurement   = "measurement_type"
	ColDevice        = "device"
	ColModel         = "model"
	ColTP            = "tp"
	ColEP            = "ep"
	ColLocalExperts  = "local_experts"
	ColGatingContext = "gating_context"
	ColRoutingPath   = "routing_path"
	ColWorkers       = "workers"
	ColCrossNode     = "cross_node"
	ColVariant       = "variant"
	ColPhase         = "phase"
	ColMedian        = "median_ms"
	ColMean          = "mean_ms"
	ColMin           = "min_ms"
	ColMax           = "max_ms"
	ColStd           = "std_ms"
	ColCount         = "count"
	ColConflict      = "conflict"
	ColKernelSource  = "kernel_source"
	ColSource        = "source"
	ColLine          = "line"
)

// SafeName reports whether a manifest file name is a plain Arrow file name
// in the dataset folder.
func SafeName(n string) bool {
	return strings.HasSuffix(n, ".arrow") && !strings.ContainsAny(n, `/\`) && n != "." && n != ".."
}
