package cost

import "github.com/ftk-dev/ftk/spec"

// Profiles is where a cost model's op times come from: the profiling
// backends (spec.Profile*) and device of the profiles a bundle was fitted
// on, or spec.ProfileRoofline without a bundle. Label says it in words, as
// simulate's summary prints it.
type Profiles struct {
	Backends []string `json:"profiling_backends"`
	Device   string   `json:"device"`
	Label    string   `json:"label"`
	// KernelSources are the kernels behind the bundle's rows (bundle
	// Meta.KernelSources) and KernelsLabel says what they are
	// (spec.KernelSourcesLabel): "plain PyTorch, not vLLM's kernels (...)".
	// Both empty without a bundle.
	KernelSources []string `json:"kernel_sources,omitempty"`
	KernelsLabel  string   `json:"kernels_label,omitempty"`
	// MeasuredAt and BlockSizes are the engine limits and KV-cache block
	// sizes the bundle's profiles were measured at (as recorded); Limits
	// says, naming both values, where the simulation's own differ
	// (spec.EngineLimits.Beyond).
	MeasuredAt *spec.EngineLimits `json:"engine_limits,omitempty"`
	BlockSizes []int              `json:"block_sizes,omitempty"`
	Limits     []string           `json:"limit_notes,omitempty"`
}

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
func profilesOf(ps PredictorSet, lim spec.EngineLimits) Profiles {
	p, ok := ps.(provenanced)
	if !ok {
		return Profiles{Label: "predictors given by the caller (profiling backend unknown)"}
	}
	device, backends := p.Provenance()
	out := Profiles{Backends: backends, Device: device, Label: "bundle fitted on " + spec.ProfilesLabel(backends, device)}
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
func rooflineProfiles(device string) Profiles {
	return Profiles{Backends: []string{spec.ProfileRoofline}, Device: device,
		Label: "none: the built-in roofline device model of " + device + " (not measured)"}
}
