package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/spec"
)

// Names of the corrections calibration fits: they are the keys of the
// calibration file that cost.Calibration reads.
const (
	ParamHostMsPerStep = "host_ms_per_step"
	ParamLaunchUs      = "launch_us"
	// familyParamPrefix + a family name (linear_op, attention, moe,
	// collective) is that family's device-time scale.
	familyParamPrefix = "family_scale."
)

// calibratedFamilies are the operator families a calibration may scale.
var calibratedFamilies = []spec.Family{spec.FamilyLinear, spec.FamilyAttention, spec.FamilyMoE, spec.FamilyCollective}

// CalibrationParams lists every correction calibration can fit.
func CalibrationParams() []string {
	names := []string{ParamHostMsPerStep, ParamLaunchUs}
	for _, f := range calibratedFamilies {
		names = append(names, familyParamPrefix+string(f))
	}
	return names
}

// param is one fitted correction and how the optimiser sees it: host time
// in units of hostUnitMs (its absolute value, so it stays non-negative),
// the launch cost and the scales by their logarithm (so they stay positive
// and move by ratios).
type param struct {
	name   string
	family string // for family scales
	start  float64
}

func (p param) toX(v float64) float64 {
	if p.name == ParamHostMsPerStep {
		return v / hostUnitMs
	}
	return math.Log(v)
}

func (p param) fromX(x float64) float64 {
	if p.name == ParamHostMsPerStep {
		return math.Abs(x) * hostUnitMs
	}
	return math.Exp(x)
}

// perturbed is a value clearly away from v, to test whether the parameter
// moves the metrics at all.
func (p param) perturbed(v float64) float64 {
	if p.name == ParamHostMsPerStep {
		return v + max(1, v/2)
	}
	return v * 1.5
}

func (p param) get(c *cost.Calibration) float64 {
	switch p.name {
	case ParamHostMsPerStep:
		return c.HostMsPerStep
	case ParamLaunchUs:
		return c.LaunchUs
	}
	if s, ok := c.FamilyScale[p.family]; ok {
		return s
	}
	return 1
}

func (p param) set(c *cost.Calibration, v float64) {
	switch p.name {
	case ParamHostMsPerStep:
		c.HostMsPerStep = v
	case ParamLaunchUs:
		c.LaunchUs = v
	default:
		if c.FamilyScale == nil {
			c.FamilyScale = map[string]float64{}
		}
		c.FamilyScale[p.family] = v
	}
}

// parseParams resolves parameter names ("attention" is accepted for
// "family_scale.attention"); empty means all. launchUs is the starting
// launch cost (the device's).
func parseParams(names []string, launchUs float64) ([]param, error) {
	if len(names) == 0 {
		names = CalibrationParams()
	}
	var out []param
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !strings.HasPrefix(n, familyParamPrefix) && n != ParamHostMsPerStep && n != ParamLaunchUs {
			n = familyParamPrefix + n
		}
		if !slices.Contains(CalibrationParams(), n) {
			return nil, fmt.Errorf("unknown correction %q (known: %s)", strings.TrimPrefix(n, familyParamPrefix), strings.Join(CalibrationParams(), ", "))
		}
		if slices.ContainsFunc(out, func(p param) bool { return p.name == n }) {
			continue
		}
		p := param{name: n, family: strings.TrimPrefix(n, familyParamPrefix), start: 1}
		switch n {
		case ParamHostMsPerStep:
			p.start = 0
		case ParamLaunchUs:
			p.start = launchUs
		}
		out = append(out, p)
	}
	return out, nil
}

// hostUnitMs is the host time that the optimiser moves as far as a factor
// e of a scale.
const hostUnitMs = 2
