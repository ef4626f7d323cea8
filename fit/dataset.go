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
// launches no kernel); negative or non-finite times are refused. A
// dataset of several models (ingest of a folder of them) is refused: pick
// one with FromDatasetOf.
func FromDataset(ds *dataset.Dataset, measurement string) (*TrainingSet, error) {
	return FromDatasetOf(ds, measurement, "")
}

// FromDatasetOf is FromDataset where a dataset of several models gives
// the samples of one, model (a catalog name, as ingest labels samples),
// and the model-independent ones (collectives). With model "", or a
// dataset of one model, it is FromDataset.
func FromDatasetOf(ds *dataset.Dataset, measurement, model string) (*TrainingSet, error) {
	if ds == nil || len(ds.Samples) == 0 {
		return nil, errors.New("fit: the dataset has no samples")
	}
	if measurement == "" {
		measurement = spec.CUDAEvent
	}
	ts := &TrainingSet{Device: ds.Manifest.Device, Model: ds.Manifest.Model, Measurement: measurement, Checksum: "sha256:" + ds.Checksum()}
	all := map[string]bool{}
	for _, s := range ds.Samples {
		if s.Key.Measurement == measurement && s.Model != "" {
			all[s.Model] = true
		}
	}
	if len(all) < 2 {
		model = ""
	}
	if model != "" {
		ts.Model = model
	}
	byKey := map[spec.OpKey]int{}
	models := map[string]bool{}
	backendOf := map[string]string{} // input path -> its profiling backend
	for _, in := range ds.Manifest.Inputs {
		backendOf[in.Path] = in.Backend
	}
	backends := map[string]bool{}
	used := map[string]bool{} // inputs that gave a training row
	for _, s := range ds.Samples {
		if s.Key.Measurement != measurement {
			continue
		}
		if model != "" && s.Model != "" && s.Model != model {
			continue
		}
		if b := backendOf[s.Source]; b != "" {
			backends[b] = true
		}
		used[s.Source] = true
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
		if k := s.KernelSource; k != "" && !slices.Contains(ts.Ops[i].KernelSources, k) {
			ts.Ops[i].KernelSources = append(ts.Ops[i].KernelSources, k)
		}
		ts.Ops[i].Rows = append(ts.Ops[i].Rows, Row{
			X: s.Features, TimeMs: s.MedianMs, Group: s.Variant, Source: s.Source, Line: s.Line,
		})
	}
	sorted := func(set map[string]bool) string {
		var names []string
		for m := range set {
			names = append(names, m)
		}
		slices.Sort(names)
		return strings.Join(names, ", ")
	}
	if model != "" && !models[model] {
		return nil, fmt.Errorf("fit: the dataset has no %s samples of model %s (it has %s); pick one with --model", measurement, model, sorted(all))
	}
	if len(ts.Ops) == 0 {
		return nil, fmt.Errorf("fit: the dataset has no %s samples (it has %s); choose one with --measurement",
			measurement, strings.Join(ds.Manifest.Measurements, ", "))
	}
	if ts.Model == "" && len(models) > 1 {
		return nil, fmt.Errorf("fit: the dataset mixes models %s; a bundle holds one model: pick one with --model (or ingest one model's profiles)", sorted(models))
	}
	for b := range backends {
		ts.Backends = append(ts.Backends, b)
	}
	slices.Sort(ts.Backends)
	for i := range ts.Ops {
		slices.Sort(ts.Ops[i].KernelSources)
	}
	var inputs []dataset.Input
	for _, in := range ds.Manifest.Inputs {
		if used[in.Path] {
			inputs = append(inputs, in)
		}
	}
	ts.MeasuredAt, ts.BlockSizes = dataset.MeasuredAt(inputs)
	ts.sortOps()
	return ts, nil
}
