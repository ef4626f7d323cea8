package runresult

import (
	"fmt"
	"os"
	"sort"

	"github.com/ftk-dev/ftk/spec"
)

// Calibration corrects the cost model with figures fitted from an
// end-to-end run (ftk validate calibrate writes it). The zero value changes
// nothing.
type Calibration struct {
	// HostMsPerStep, when positive, replaces the modelled host time of an
	// engine step (scheduling, input preparation, sampling, output
	// processing; a CPU-overhead profile or the default host model) with
	// this figure, milliseconds, spent before the forward pass. It is set
	// by hand (a measured figure); validate calibrate fits HostScale.
	HostMsPerStep float64 `json:"host_ms_per_step" yaml:"host_ms_per_step"`
	// HostScale, when positive, multiplies the modelled host time of an
	// engine step (every part: scheduling, input preparation, sampling,
	// output processing, the multi-GPU hand-off; from a CPU-overhead
	// profile or the default host model), keeping its growth with
	// sequences and tokens. It is what validate calibrate fits: unlike a
	// fixed figure it stays apart from HostSpeed, which scales the per-op
	// issue cost of the forward pass (a fixed per-step figure and the issue
	// time of a host-bound eager step both lengthen every step alike).
	HostScale float64 `json:"host_scale,omitempty" yaml:"host_scale,omitempty"`
	// HostSpeed multiplies every host issue cost (the CPU timeline of the
	// forward pass) when positive: above 1 the host is slower than the
	// issue costs say (a busier or older CPU), below 1 faster.
	HostSpeed float64 `json:"host_speed,omitempty" yaml:"host_speed,omitempty"`
	// IssueScale multiplies the issue cost of one kernel kind (aten,
	// custom, triton, attention, collective; spec.KernelKind).
	IssueScale map[string]float64 `json:"issue_scale,omitempty" yaml:"issue_scale,omitempty"`
	// FamilyScale multiplies the device time of an operator family
	// (linear_op, attention, moe, collective).
	FamilyScale map[string]float64 `json:"family_scale,omitempty" yaml:"family_scale,omitempty"`
}

// LoadCalibration reads a calibration YAML file. Unknown keys are errors.
func LoadCalibration(path string) (Calibration, error) {
	var c Calibration
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("calibration %s: %w", path, err)
	}
	if err := DecodeYAML(data, &c); err != nil {
		return c, fmt.Errorf("calibration %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("calibration %s: %w", path, err)
	}
	return c, nil
}

// scaledFamilies are the families FamilyScale may name.
var scaledFamilies = []spec.Family{spec.FamilyLinear, spec.FamilyAttention, spec.FamilyMoE, spec.FamilyCollective}

// Bounds of a usable calibration: a host time of a minute per engine step,
// or a factor of a thousand on any modelled time, is a mistake (a unit or
// a typo), not a measurement; NaN and infinities are refused with them.
const (
	maxHostMsPerStep = 60_000.0
	maxScale         = 1000.0
)

// Validate checks that every figure is a usable number.
func (c *Calibration) Validate() error {
	for _, f := range []struct {
		name  string
		v, hi float64
	}{{"host_ms_per_step", c.HostMsPerStep, maxHostMsPerStep}, {"host_scale", c.HostScale, maxScale}, {"host_speed", c.HostSpeed, maxScale}} {
		if !(f.v >= 0 && f.v <= f.hi) { // NaN too
			return fmt.Errorf("calibration: %s is %g: want a number from 0 (unset) to %g", f.name, f.v, f.hi)
		}
	}
	kinds := make([]string, 0, len(c.IssueScale))
	for k := range c.IssueScale {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if _, ok := spec.ParseKernelKind(k); !ok {
			return fmt.Errorf("calibration: issue_scale names unknown kernel kind %q (known: %v)", k, spec.KernelKinds())
		}
		if s := c.IssueScale[k]; !(s > 0 && s <= maxScale) {
			return fmt.Errorf("calibration: issue_scale[%s] is %g: want a number above 0, at most %g", k, s, maxScale)
		}
	}
	names := make([]string, 0, len(c.FamilyScale))
	for f := range c.FamilyScale {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		known := false
		for _, k := range scaledFamilies {
			known = known || f == string(k)
		}
		if !known {
			return fmt.Errorf("calibration: family_scale names unknown family %q (known: %v)", f, scaledFamilies)
		}
		if s := c.FamilyScale[f]; !(s > 0 && s <= maxScale) {
			return fmt.Errorf("calibration: family_scale[%s] is %g: want a number above 0, at most %g", f, s, maxScale)
		}
	}
	return nil
}

// ApplyIssue applies the host speed and per-kind scales to issue costs.
func (c *Calibration) ApplyIssue(costs *spec.IssueCosts) {
	if c.HostSpeed > 0 {
		costs.Scale(c.HostSpeed)
	}
	for name, s := range c.IssueScale {
		if k, ok := spec.ParseKernelKind(name); ok {
			costs.KernelUs[k] *= s
		}
	}
}

// Scale returns the factor for family f (1 when not calibrated).
func (c *Calibration) Scale(f spec.Family) float64 {
	if s, ok := c.FamilyScale[string(f)]; ok {
		return s
	}
	return 1
}
