package fit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// Row is one profiled shape of one operator.
type Row struct {
	// X holds the operator's features in spec.OpFeatures order.
	X []float64
	// TimeMs is the median time of the shape.
	TimeMs float64
	// Group names the sweep the row came from (rows of one profiler run
	// share it); empty when unknown. Conflicting sweeps of one operator
	// are resolved by group (see resolveConflicts).
	Group string
	// Source and Line locate the row in the raw profile, for messages.
	Source string
	Line   int
}

// OpRows are the rows of one predictor.
type OpRows struct {
	Key  spec.OpKey
	Rows []Row
	// KernelSources are the distinct kernel sources of the rows (the
	// dataset samples' kernel_source), sorted; the bundle records them.
	KernelSources []string
}

// TrainingSet is what fit trains on: rows of one device, one model and one
// measurement type, grouped by operator key.
type TrainingSet struct {
	Device      string
	Model       string
	Measurement string
	// Checksum identifies the training data (the profile dataset's
	// checksum when it came from one).
	Checksum string
	// Backends are the profiling backends of the rows (spec.Profile*:
	// synthetic, torch-cpu, gpu), sorted; the bundle records them.
	Backends []string
	// MeasuredAt and BlockSizes are the engine limits and KV-cache block
	// sizes the rows were measured at (dataset.MeasuredAt of the inputs
	// they came from); the bundle records them.
	MeasuredAt *spec.EngineLimits
	BlockSizes []int
	Ops        []OpRows
}

// sortOps orders the operators by key.
func (ts *TrainingSet) sortOps() {
	slices.SortFunc(ts.Ops, func(a, b OpRows) int { return bundle.CompareKeys(a.Key, b.Key) })
}

// computeChecksum hashes the rows, for training sets that did not come
// from a dataset with a checksum of its own.
func (ts *TrainingSet) computeChecksum() string {
	h := sha256.New()
	var buf [8]byte
	put := func(v float64) {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
		h.Write(buf[:])
	}
	h.Write([]byte(ts.Device + "\x00" + ts.Model + "\x00" + ts.Measurement + "\x00"))
	for _, o := range ts.Ops {
		h.Write([]byte(o.Key.String()))
		for _, r := range o.Rows {
			for _, v := range r.X {
				put(v)
			}
			put(r.TimeMs)
			h.Write([]byte(r.Group + "\x00"))
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
