package cost

import (
	"github.com/ftk-dev/ftk/spec"

	"github.com/ftk-dev/ftk/runresult"
)

// kernelSourced is a PredictorSet that knows the kernels its rows timed
// (a fit bundle).
type kernelSourced interface {
	KernelSources() []string
}

// labelled is a PredictorSet that describes its profiles itself (kernel
// tables: the vLLM version folder each table was read from).
type labelled interface {
	Label() string
}

// provenanced is a PredictorSet that knows what it was fitted on (a fit
// bundle).
type provenanced interface {
	Provenance() (device string, backends []string)
}

// measured is a PredictorSet that knows the engine limits and block sizes
// its profiles were measured at (a fit bundle).
type measured interface {
	MeasuredAt() (*spec.EngineLimits, []int)
}

// profilesOf describes the profiles behind a predictor set and compares
// the limits of the simulation with theirs.
func profilesOf(ps PredictorSet, lim spec.EngineLimits) runresult.Profiles {
	p, ok := ps.(provenanced)
	if !ok {
		return runresult.Profiles{Label: "predictors given by the caller (profiling backend unknown)"}
	}
	device, backends := p.Provenance()
	out := runresult.Profiles{Backends: backends, Device: device, Label: "bundle fitted on " + spec.ProfilesLabel(backends, device)}
	if l, ok := ps.(labelled); ok {
		out.Label = l.Label()
	}
	if k, ok := ps.(kernelSourced); ok {
		out.KernelSources = k.KernelSources()
		out.KernelsLabel = spec.KernelSourcesLabel(out.KernelSources)
	}
	if m, ok := ps.(measured); ok {
		out.MeasuredAt, out.BlockSizes = m.MeasuredAt()
		out.Limits = lim.Beyond(out.MeasuredAt, out.BlockSizes)
	}
	return out
}

// rooflineProfiles describes a run without a bundle.
func rooflineProfiles(device string) runresult.Profiles {
	return runresult.Profiles{Backends: []string{spec.ProfileRoofline}, Device: device,
		Label: "none: the built-in roofline device model of " + device + " (not measured)"}
}
