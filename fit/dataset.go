package fit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// FromDataset selects the samples of one measurement type from a profile
// dataset. Every sample becomes a row of its operator key; the group of a
// row is its variant (pure, mixed, true_mixed), so reduced batches never
// silently merge with single-sequence shapes they disagree with (see
// resolveConflicts). Samples of 0 ms are kept (a KERNEL_ONLY reshape
// launches no kernel); negative or non-finite times are refused.
func FromDataset(ds *dataset.Dataset, measurement string) (*TrainingSet, error) {
	if ds == nil || len(ds.Samples) == 0 {
		return nil, errors.New("fit: the dataset has no samples")
	}
	if measurement == "" {
		measurement = spec.CUDAEvent
	}
	ts := &TrainingSet{Device: ds.Manifest.Device, Model: ds.Manifest.Model, Measurement: measurement, Checksum: "sha256:" + ds.Checksum()}
	byKey := map[spec.OpKey]int{}
	models := map[string]bool{}
	backendOf := map[string]string{} // input path -> its profiling backend
	for _, in := range ds.Manifest.Inputs {
		backendOf[in.Path] = in.Backend
	}
	backends := map[string]bool{}
	for _, s := range ds.Samples {
		if s.Key.Measurement != measurement {
			continue
		}
		if b := backendOf[s.Source]; b != "" {
			backends[b] = true
		}
		if !(s.MedianMs >= 0) || math.IsInf(s.MedianMs, 0) {
			return nil, fmt.Errorf("fit: %s line %d: %s median %v ms is not a time", s.Source, s.Line, s.Key, s.MedianMs)
		}
		if s.Model != "" {
			models[s.Model] = true
		}
		i, ok := byKey[s.Key]
		if !ok {
			i = len(ts.Ops)
			byKey[s.Key] = i
			ts.Ops = append(ts.Ops, OpRows{Key: s.Key})
		}
		ts.Ops[i].Rows = append(ts.Ops[i].Rows, Row{
			X: s.Features, TimeMs: s.MedianMs, Group: s.Variant, Source: s.Source, Line: s.Line,
		})
	}
	if len(ts.Ops) == 0 {
		return nil, fmt.Errorf("fit: the dataset has no %s samples (it has %s); choose one with --measurement",
			measurement, strings.Join(ds.Manifest.Measurements, ", "))
	}
	if ts.Model == "" && len(models) > 1 {
		var names []string
		for m := range models {
			names = append(names, m)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("fit: the dataset mixes models %s; a bundle holds one model (ingest one model's profiles)", strings.Join(names, ", "))
	}
	for b := range backends {
		ts.Backends = append(ts.Backends, b)
	}
	slices.Sort(ts.Backends)
	ts.sortOps()
	return ts, nil
}
