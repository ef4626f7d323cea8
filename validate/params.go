package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Names of the corrections calibration fits: they are the keys of the
// calibration file that runresult.Calibration reads.
const (
	// ParamHostScale multiplies the modelled host time of an engine step
	// (scheduling, input preparation, sampling, output processing,
	// hand-off), keeping its growth with sequences and tokens.
	ParamHostScale = "host_scale"
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
	names := []string{ParamHostScale, ParamHostSpeed}
	for _, f := range calibratedFamilies {
		names = append(names, familyParamPrefix+string(f))
	}
	for _, k := range spec.KernelKinds() {
		names = append(names, issueParamPrefix+k.String())
	}
	return names
}

// param is one fitted correction and how the optimiser sees it: every
// correction is a factor, moved by its logarithm (so it stays positive and
// moves by ratios).
type param struct {
	name   string
	family string // for family scales
	kind   string // for issue scales
	start  float64
}

func (p param) toX(v float64) float64 { return math.Log(v) }

// fromX is the factor at x, kept within what a calibration file may hold
// (runresult.Calibration.Validate refuses a factor above maxFactor): beyond it
// the objective is flat, so a search that runs off towards a huge factor
// (runs that do not identify it) writes a file simulate accepts.
func (p param) fromX(x float64) float64 { return min(max(math.Exp(x), 1/maxFactor), maxFactor) }

// maxFactor is the largest factor runresult.Calibration accepts.
const maxFactor = 1000

// probeValues are the two values p is probed at. A scale acts on the
// metrics as a power law and is probed either side of its start, at x1.5
// and /1.5. The host scale multiplies a term added to every step, a few
// percent of it (the default host model: 0.2 ms plus a few microseconds a
// sequence): a x1.5 probe's tenth of a millisecond is lost in the step
// noise of P95 metrics, so it is probed upwards, at start x(1 + 2 x
// hostProbe) and x(1 + hostProbe), and a response that is not linear in the
// added time (ln change at the far probe unlike twice that at the near
// one) is its uneven part (see probeParam).
func (p param) probeValues() [2]float64 {
	if p.name == ParamHostScale {
		return [2]float64{p.start * (1 + 2*hostProbe), p.start * (1 + hostProbe)}
	}
	return [2]float64{p.start * probeFactor, p.start / probeFactor}
}

// hostProbe is the relative step of the host scale's probe: 3 (x4 and x7)
// adds about 1 and 2 ms a step at 32 sequences on a Hopper host (the 1 ms
// probe of the fixed host time this factor replaced); 1.5 left the P95
// jumps of CUDA-graph runs at half the slope, on the MinSlopeRatio edge
// (TestCalibrateFreesWhatRunsIdentify).
const hostProbe = 3

func (p param) get(c *runresult.Calibration) float64 {
	switch p.name {
	case ParamHostSpeed:
		if c.HostSpeed > 0 {
			return c.HostSpeed
		}
		return 1
	case ParamHostScale:
		if c.HostScale > 0 {
			return c.HostScale
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

func (p param) set(c *runresult.Calibration, v float64) {
	switch p.name {
	case ParamHostSpeed:
		c.HostSpeed = v
	case ParamHostScale:
		c.HostScale = v
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
		if !strings.HasPrefix(n, familyParamPrefix) && !strings.HasPrefix(n, issueParamPrefix) && n != ParamHostSpeed && n != ParamHostScale {
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
		case strings.HasPrefix(n, issueParamPrefix):
			p.kind = strings.TrimPrefix(n, issueParamPrefix)
		case strings.HasPrefix(n, familyParamPrefix):
			p.family = strings.TrimPrefix(n, familyParamPrefix)
		}
		out = append(out, p)
	}
	return out, nil
}
