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
	// ParamHostSpeed multiplies every host issue cost (the CPU timeline of
	// the forward pass).
	ParamHostSpeed = "host_speed"
	// familyParamPrefix + a family name (linear_op, attention, moe,
	// collective) is that family's device-time scale.
	familyParamPrefix = "family_scale."
	// issueParamPrefix + a kernel kind (aten, custom, triton, attention,
	// collective) scales that kind's issue cost.
	issueParamPrefix = "issue_scale."
)

// calibratedFamilies are the operator families a calibration may scale.
var calibratedFamilies = []spec.Family{spec.FamilyLinear, spec.FamilyAttention, spec.FamilyMoE, spec.FamilyCollective}

// CalibrationParams lists every correction calibration can fit.
func CalibrationParams() []string {
	names := []string{ParamHostMsPerStep, ParamHostSpeed}
	for _, f := range calibratedFamilies {
		names = append(names, familyParamPrefix+string(f))
	}
	for _, k := range spec.KernelKinds() {
		names = append(names, issueParamPrefix+k.String())
	}
	return names
}

// param is one fitted correction and how the optimiser sees it: host time
// in units of hostUnitMs (its absolute value, so it stays non-negative),
// the host speed and the scales by their logarithm (so they stay positive
// and move by ratios).
type param struct {
	name   string
	family string // for family scales
	kind   string // for issue scales
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
	case ParamHostSpeed:
		if c.HostSpeed > 0 {
			return c.HostSpeed
		}
		return 1
	}
	if p.kind != "" {
		if s, ok := c.IssueScale[p.kind]; ok {
			return s
		}
		return 1
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
	case ParamHostSpeed:
		c.HostSpeed = v
	default:
		if p.kind != "" {
			if c.IssueScale == nil {
				c.IssueScale = map[string]float64{}
			}
			c.IssueScale[p.kind] = v
			return
		}
		if c.FamilyScale == nil {
			c.FamilyScale = map[string]float64{}
		}
		c.FamilyScale[p.family] = v
	}
}

// CheckParams reports the first name among names that is not a correction
// calibration can fit (what Calibrate would refuse), so that a command
// line can refuse it before reading any run.
func CheckParams(names []string) error {
	_, err := parseParams(names)
	return err
}

// parseParams resolves parameter names ("attention" is accepted for
// "family_scale.attention"); empty means all.
func parseParams(names []string) ([]param, error) {
	if len(names) == 0 {
		names = CalibrationParams()
	}
	var out []param
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !strings.HasPrefix(n, familyParamPrefix) && !strings.HasPrefix(n, issueParamPrefix) && n != ParamHostMsPerStep && n != ParamHostSpeed {
			n = familyParamPrefix + n
		}
		if !slices.Contains(CalibrationParams(), n) {
			return nil, fmt.Errorf("unknown correction %q (known: %s)", strings.TrimPrefix(n, familyParamPrefix), strings.Join(CalibrationParams(), ", "))
		}
		if slices.ContainsFunc(out, func(p param) bool { return p.name == n }) {
			continue
		}
		p := param{name: n, start: 1}
		switch {
		case n == ParamHostMsPerStep:
			p.start = 0
		case strings.HasPrefix(n, issueParamPrefix):
			p.kind = strings.TrimPrefix(n, issueParamPrefix)
		case strings.HasPrefix(n, familyParamPrefix):
			p.family = strings.TrimPrefix(n, familyParamPrefix)
		}
		out = append(out, p)
	}
	return out, nil
}

// hostUnitMs is the host time that the optimiser moves as far as a factor
// e of a scale.
const hostUnitMs = 2
