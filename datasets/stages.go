package datasets

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ArrivalsStages is a Poisson process whose rate changes over time: a
// sequence of stages, each a duration at a rate (RateStage); the last
// stage's rate holds after it ends.
const ArrivalsStages = "stages"

// RateStage is one stage of ArrivalsStages: DurationS seconds at RateRPS
// requests per second (0: a pause).
type RateStage struct {
	DurationS, RateRPS float64
}

// ParseStages parses "DURs@RATE,...", e.g. "60s@2,120s@8,60s@0.5": two
// requests/s for a minute, eight for two minutes, then half a request a
// second.
func ParseStages(s string) ([]RateStage, error) {
	var out []RateStage
	for _, part := range strings.Split(s, ",") {
		d, r, ok := strings.Cut(strings.TrimSpace(part), "@")
		dur, derr := strconv.ParseFloat(strings.TrimSuffix(d, "s"), 64)
		rate, rerr := strconv.ParseFloat(r, 64)
		if !ok || !strings.HasSuffix(d, "s") || derr != nil || rerr != nil {
			return nil, fmt.Errorf("stages %q: stage %q: want DURATIONs@RATE, e.g. 60s@2,120s@8", s, part)
		}
		out = append(out, RateStage{DurationS: dur, RateRPS: rate})
	}
	return out, validateStages(out)
}

func validateStages(st []RateStage) error {
	if len(st) == 0 {
		return fmt.Errorf("stages arrivals need at least one stage (DURATIONs@RATE)")
	}
	for i, x := range st {
		switch {
		case !(x.DurationS > 0) || math.IsInf(x.DurationS, 0):
			return fmt.Errorf("stage %d: duration %g s must be finite and > 0", i+1, x.DurationS)
		case !(x.RateRPS >= 0) || math.IsInf(x.RateRPS, 0):
			return fmt.Errorf("stage %d: rate %g must be finite and >= 0", i+1, x.RateRPS)
		}
	}
	if st[len(st)-1].RateRPS == 0 {
		return fmt.Errorf("the last stage's rate holds after it ends: it must be > 0")
	}
	return nil
}

// stagesNext is the next arrival after t of a Poisson process with the
// piecewise-constant rate of st, given e, an Exp(1) draw: the time by
// which the integrated rate from t grows by e.
func stagesNext(st []RateStage, t, e float64) float64 {
	start := 0.0
	for i, x := range st {
		end := start + x.DurationS
		if i == len(st)-1 {
			end = math.Inf(1)
		}
		if t < end {
			if x.RateRPS > 0 {
				if need := e / x.RateRPS; t+need <= end {
					return t + need
				}
				e -= x.RateRPS * (end - t)
			}
			t = end
		}
		start = end
	}
	return t
}

// stagesString describes st, e.g. "60s@2,120s@8".
func stagesString(st []RateStage) string {
	parts := make([]string, len(st))
	for i, x := range st {
		parts[i] = fmt.Sprintf("%.6gs@%.6g", x.DurationS, x.RateRPS)
	}
	return strings.Join(parts, ",")
}
