package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/ftk-dev/ftk/spec"
)

// SchemaVersion is the version of the dataset layout (Arrow columns and
// manifest). Load refuses other versions.
const SchemaVersion = 5

// ManifestKind identifies a profile dataset manifest.
const ManifestKind = "ftk-profile-dataset"

// ManifestFile is the manifest's name inside a dataset directory.
const ManifestFile = "manifest.json"

// Variants of a sample: a single uniform shape, a batch of several prefill
// sequences reduced to one equivalent shape, or a batch mixing prefill and
// decode sequences.
const (
	VariantPure      = "pure"
	VariantMixed     = "mixed"
	VariantTrueMixed = "true_mixed"
)

// Sample is one measured shape of one operator.
type Sample struct {
	Key      spec.OpKey // Op, Measurement, TP, and per family: MoE EP/LocalExperts/GatingContext/RoutingPath, collectives Workers/CrossNode
	Features []float64  // in spec.OpFeatures(Key.Op) order
	// Statistics of the repeated timings, milliseconds. MinMs, MaxMs and
	// StdMs are NaN where the format has no such column (CPU overhead).
	MedianMs, MeanMs, MinMs, MaxMs, StdMs float64
	Count                                 int    // 0 when the file has no .count column
	Device, Model                         string // canonical names or as given; Model is "" for collectives
	Source                                string // input path as given
	Line                                  int    // 1-based line in the source file
	// Variant is VariantPure, VariantMixed or VariantTrueMixed (attention
	// batches reduced with spec.PrefillEquivalent / spec.DecodeEquivalent).
	Variant string
	// KernelSource names the kernel or call that was timed (the row's
	// kernel_source; spec.KernelOrigin reads its origin); "" when the
	// profile records none.
	KernelSource string
	// Conflict marks a duplicated shape whose timing disagrees with another
	// sample of the same shape (see Manifest.Conflicts). It is kept.
	Conflict bool
}

// Manifest describes a dataset: what went in, what came out, what was left
// out and why. It is written as manifest.json, last, in the dataset
// directory.
type Manifest struct {
	Kind          string `json:"kind"`
	SchemaVersion int    `json:"schema_version"`
	Device        string `json:"device"`
	// Model is the dataset's model when all model-specific samples share
	// one; "" when they span several (listed in Models).
	Model        string   `json:"model"`
	Models       []string `json:"models"`
	Measurements []string `json:"measurements"`
	// Backends are the profiling backends of the inputs (spec.Profile*:
	// synthetic, torch-cpu, gpu), sorted: whether the timings were
	// measured, and where.
	Backends []string `json:"profiling_backends"`
	// KernelSources are the distinct kernel sources of the samples
	// (spec.KernelOrigin reads what each is), sorted; empty when no input
	// records one.
	KernelSources []string `json:"kernel_sources"`
	Samples       int      `json:"samples"`
	ExcludedRows  int      `json:"excluded_rows"`
	// DuplicateRows counts exact duplicate rows dropped (Input.DuplicateRows
	// summed); IdenticalFiles lists inputs skipped because an earlier input
	// has the same bytes. Repeats of one measurement would otherwise count
	// as independent samples and sit on both sides of a fit's CV split.
	DuplicateRows  int             `json:"duplicate_rows"`
	IdenticalFiles []IdenticalFile `json:"identical_files"`
	// DuplicatedShapes counts groups of samples with the same key, features
	// and conditions; Conflicts lists those whose timings disagree.
	DuplicatedShapes int          `json:"duplicated_shapes"`
	Conflicts        []Conflict   `json:"conflicts"`
	Files            []OutputFile `json:"files"`
	// MeasuredAt is the widest engine limits the inputs record (each
	// field the largest of the inputs'; nil when none records them) and
	// BlockSizes the KV-cache block sizes of its attention rows: what a
	// simulation from this dataset can be compared with.
	MeasuredAt *spec.EngineLimits `json:"engine_limits,omitempty"`
	BlockSizes []int              `json:"block_sizes,omitempty"`
	Inputs     []Input            `json:"inputs"`
	Notes      []string           `json:"notes"`
}

// OutputFile is one Arrow IPC file of the dataset.
type OutputFile struct {
	Name        string `json:"name"`
	Family      string `json:"family"`
	Measurement string `json:"measurement_type"`
	Rows        int    `json:"rows"`
	SHA256      string `json:"sha256"`
}

// Input is one ingested CSV file.
type Input struct {
	Path    string `json:"path"` // as given (or as found under a given folder)
	SHA256  string `json:"sha256"`
	Bytes   int64  `json:"bytes"`
	Family  string `json:"family"`
	Dialect string `json:"dialect"`
	// Measurement is the file's measurement type; MeasurementDefaulted says
	// it was not in the file (legacy files: CUDA_EVENT, or KERNEL_ONLY for a
	// *_kernel_only.csv name) and MeasurementNote why.
	Measurement          string `json:"measurement_type"`
	MeasurementDefaulted bool   `json:"measurement_type_defaulted,omitempty"`
	MeasurementNote      string `json:"measurement_type_note,omitempty"`
	Device               string `json:"device"`
	DeviceFrom           string `json:"device_from"`
	Model                string `json:"model"`
	ModelFrom            string `json:"model_from"`
	// Backend is the input's profiling backend (spec.Profile*) and
	// BackendFrom what says so: its profiling_backend column, its
	// ftk-collect.yaml, or the rule for files that name none.
	Backend     string `json:"profiling_backend"`
	BackendFrom string `json:"profiling_backend_from"`
	// KernelSources are the distinct kernel sources of the input's samples
	// (its kernel_source column), sorted.
	KernelSources []string `json:"kernel_sources,omitempty"`
	Shard         string   `json:"shard,omitempty"`
	// EngineLimits are the limits the ftk-collect.yaml beside the file says
	// its sweep was planned to (nil: not recorded, a third-party profile);
	// BlockSizes the distinct block_size cells of an attention file (the
	// KV-cache page size its attention kernels ran with).
	EngineLimits *spec.EngineLimits `json:"engine_limits,omitempty"`
	BlockSizes   []int              `json:"block_sizes,omitempty"`
	RowsIn       int                `json:"rows_in"`  // data records in the file
	RowsOut      int                `json:"rows_out"` // records that gave at least one sample
	// DuplicateRows counts records dropped because an earlier record of the
	// file has exactly the same cells (a sweep appended twice);
	// DuplicateLines lists the first of them.
	DuplicateRows  int   `json:"duplicate_rows"`
	DuplicateLines []int `json:"duplicate_lines,omitempty"`
	Samples        int   `json:"samples"`
	// Excluded groups every excluded row (Op "") or operator of a row by
	// column, operator and reason; ExcludedRows counts them.
	Excluded     []Excluded `json:"excluded"`
	ExcludedRows int        `json:"excluded_rows"`
	// Renamed lists legacy operator names mapped to current ones.
	Renamed []Rename `json:"renamed,omitempty"`
	// NotIngested lists columns that are neither keys, features, timings
	// nor kept extras.
	NotIngested []string `json:"columns_not_ingested,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	// KernelTraced lists, by predictor key, the samples of a CUDA_EVENT
	// input whose rows read as kernel time from a trace (spec.KernelTraced:
	// every sample a whole number of nanoseconds, where a CUDA event pair
	// gives float32 milliseconds); KernelTracedRows counts those rows. They
	// are kept as the file labels them, and lack the host gaps a CUDA_EVENT
	// sample holds.
	KernelTraced     []KeyCount `json:"kernel_traced,omitempty"`
	KernelTracedRows int        `json:"kernel_traced_rows,omitempty"`
}

// KeyCount is a number of samples of one predictor key (spec.OpKey.String).
type KeyCount struct {
	Key     string `json:"key"`
	Samples int    `json:"samples"`
}

// IdenticalFile is an input skipped because an earlier one (SameAs) has
// the same content.
type IdenticalFile struct {
	Path   string `json:"path"`
	SameAs string `json:"same_as"`
	SHA256 string `json:"sha256"`
}

// Excluded is a group of excluded rows of one input: the same column
// (1-based; 0 when the whole record is malformed), operator ("" for the
// whole row) and reason, at the listed 1-based lines.
type Excluded struct {
	Column     int    `json:"column"`
	ColumnName string `json:"column_name,omitempty"`
	Op         string `json:"op,omitempty"`
	Reason     string `json:"reason"`
	Lines      []int  `json:"lines"`
}

// Rename records a legacy operator column mapped to a current operator.
type Rename struct {
	From string `json:"from"`
	To   string `json:"to"`
	Note string `json:"note,omitempty"`
}

// Conflict is a duplicated shape whose samples' timings disagree: medians
// more than ConflictTolerance apart and [min, max] ranges that do not all
// overlap.
type Conflict struct {
	Key      string    `json:"key"`
	Features []float64 `json:"features"`
	Variant  string    `json:"variant"`
	// MedianMinMs and MedianMaxMs bound the samples' medians.
	MedianMinMs float64 `json:"median_min_ms"`
	MedianMaxMs float64 `json:"median_max_ms"`
	Samples     int     `json:"samples"`
	// At lists where the samples are: source and lines.
	At []SourceLines `json:"at"`
}

// SourceLines are lines of one input file.
type SourceLines struct {
	Source string `json:"source"`
	Lines  []int  `json:"lines"`
}

// Dataset is a profile dataset in memory.
type Dataset struct {
	Manifest Manifest
	Samples  []Sample // in dataset order: output files by name, rows in file order
}

// ByKey groups the samples by predictor key, each group in dataset order.
func (d *Dataset) ByKey() map[spec.OpKey][]Sample {
	m := map[spec.OpKey][]Sample{}
	for _, s := range d.Samples {
		m[s.Key] = append(m[s.Key], s)
	}
	return m
}

// Checksum is the sha256 over the dataset's Arrow files: the hex digest of
// the lines "<name> <sha256 of file>\n" in file-name order. Load verifies
// every file against the manifest, so the checksum stands for the bytes.
func (m *Manifest) Checksum() string {
	h := sha256.New()
	for _, f := range m.Files {
		fmt.Fprintf(h, "%s %s\n", f.Name, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Checksum is the sha256 over the dataset's Arrow files (Manifest.Checksum):
// fit records it as its training-data checksum.
func (d *Dataset) Checksum() string { return d.Manifest.Checksum() }
