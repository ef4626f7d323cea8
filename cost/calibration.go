package cost

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
	// this figure, milliseconds, spent before the forward pass.
	HostMsPerStep float64 `json:"host_ms_per_step" yaml:"host_ms_per_step"`
	// LaunchUs replaces the device's per-kernel launch cost when positive,
	// microseconds.
	LaunchUs float64 `json:"launch_us" yaml:"launch_us"`
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

// Validate checks that every figure is usable.
func (c *Calibration) Validate() error {
	if c.HostMsPerStep < 0 || c.LaunchUs < 0 {
		return fmt.Errorf("calibration: host_ms_per_step (%g) and launch_us (%g) must not be negative", c.HostMsPerStep, c.LaunchUs)
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
		if s := c.FamilyScale[f]; !(s > 0) {
			return fmt.Errorf("calibration: family_scale[%s] must be positive, got %g", f, s)
		}
	}
	return nil
}

// scale returns the factor for family f (1 when not calibrated).
func (c *Calibration) scale(f spec.Family) float64 {
	if s, ok := c.FamilyScale[string(f)]; ok {
		return s
	}
	return 1
}
