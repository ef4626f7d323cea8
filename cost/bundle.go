package cost

import (
	"fmt"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/spec"
)

// bundlePredictors is a fit model bundle seen as a PredictorSet. An
// operator profiled only at another TP degree with the same per-GPU shape
// (replicated ops such as layer norms, measured at TP1) answers for this TP.
type bundlePredictors struct {
	b *bundle.Bundle
	m *spec.Model
}

// Predictor implements PredictorSet.
func (p bundlePredictors) Predictor(k spec.OpKey) (OpPredictor, bool) {
	pr, ok := p.b.Lookup(p.m, k)
	if !ok {
		return nil, false
	}
	return pr, true
}

// Keys implements PredictorSet.
func (p bundlePredictors) Keys() []spec.OpKey { return p.b.Keys() }

// Provenance implements provenanced: the bundle's profiled device and
// profiling backends.
func (p bundlePredictors) Provenance() (device string, backends []string) {
	return p.b.Device(), p.b.Meta().ProfilingBackends
}

// KernelSources implements kernelSourced: the kernels behind the
// bundle's rows.
func (p bundlePredictors) KernelSources() []string { return p.b.Meta().KernelSources }

// MeasuredAt implements measured: the engine limits and block sizes the
// bundle's profiles were measured at.
func (p bundlePredictors) MeasuredAt() (*spec.EngineLimits, []int) {
	m := p.b.Meta()
	return m.MeasuredAt, m.BlockSizes
}

// LoadBundle opens the fit model bundle at path for a simulation of model
// on device, refusing a bundle fitted for another device or model.
func LoadBundle(path string, model *spec.Model, device *spec.Device) (PredictorSet, error) {
	b, err := bundle.Load(path)
	if err != nil {
		return nil, err
	}
	if err := b.Check(device.Name, ""); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	got, _ := spec.CanonicalModelName(b.Model())
	want, _ := spec.CanonicalModelName(model.Name)
	if got != want {
		return nil, fmt.Errorf("bundle %s: fitted for model %s, the simulation is of %s: fit a bundle on %s profiles", path, b.Model(), model.Name, model.Name)
	}
	return bundlePredictors{b, model}, nil
}

// LoadPredictors opens what a simulation's --bundle names: kernel tables
// (an AIConfigurator database or ftk ingest's copy, LoadKernelTables, at
// vLLM version vllmVersion) or a fit model bundle (LoadBundle).
func LoadPredictors(path, vllmVersion string, model *spec.Model, device *spec.Device) (PredictorSet, error) {
	if kerneldb.IsDatabase(path) {
		return LoadKernelTables(path, vllmVersion, model, device)
	}
	return LoadBundle(path, model, device)
}

// LoadHostBundle opens a fit bundle of HOST_WALL predictors (fitted on a
// CPU-overhead profile) for a simulation of model on device, or one of CPU
// predictors: host issue costs timed on a CPU by collect host
// --device-kind cpu (the Python and dispatcher part; the simulation adds
// the device's kernel launch), which any device may use.
func LoadHostBundle(path string, model *spec.Model, device *spec.Device) (PredictorSet, error) {
	b, err := bundle.Load(path)
	if err != nil {
		return nil, err
	}
	if err := b.Check("", spec.CPUTime); err != nil {
		if err := b.Check(device.Name, spec.HostWall); err != nil {
			return nil, fmt.Errorf("host bundle %s: %w", path, err)
		}
	}
	got, _ := spec.CanonicalModelName(b.Model())
	want, _ := spec.CanonicalModelName(model.Name)
	if got != want {
		return nil, fmt.Errorf("host bundle %s: fitted for model %s, the simulation is of %s", path, b.Model(), model.Name)
	}
	return bundlePredictors{b, model}, nil
}
