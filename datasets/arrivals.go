package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Arrival process kinds.
const (
	// ArrivalsNone gives no arrival times (ArrivalS = NaN): a length-only
	// trace whose arrivals a later stage assigns.
	ArrivalsNone = ""
	// ArrivalsReplay replays the workload's recorded arrival times.
	ArrivalsReplay = "replay"
	// ArrivalsPoisson draws exponential inter-arrival times.
	ArrivalsPoisson = "poisson"
	// ArrivalsGamma draws gamma inter-arrival times with a given
	// coefficient of variation: bursty traffic when CV > 1.
	ArrivalsGamma = "gamma"
)

// Arrivals is an arrival process. Generated processes (poisson, gamma) put
// the first request at 0 s and each next one a random gap later, as vLLM's
// serving benchmark does; the gaps have mean 1/RateRPS. Stages arrivals
// draw the first arrival too, so a run may start with a pause.
type Arrivals struct {
	// Kind is ArrivalsNone, ArrivalsReplay, ArrivalsPoisson, ArrivalsGamma
	// or ArrivalsStages.
	Kind string
	// RateRPS is the mean arrival rate in requests per second. Required for
	// poisson and gamma. For replay, 0 keeps the recorded times and a
	// positive rate scales the recorded gaps (keeping their shape and the
	// first arrival) so that the replayed requests arrive at this mean rate.
	RateRPS float64
	// CV is the coefficient of variation (standard deviation / mean) of the
	// gamma inter-arrival times: 1 is Poisson, above 1 bursty, 0 a constant
	// gap of exactly 1/RateRPS. Gamma shape = 1/CV^2 (vLLM's "burstiness").
	CV float64
	// Stages are the rates of ArrivalsStages.
	Stages []RateStage
}

// MinRatePerS is the lowest arrival rate accepted: one request in 11.6
// days; below it a run's times leave the range a time in seconds holds to
// the microsecond (MaxArrivalS).
const MinRatePerS = 1e-6

// MaxArrivalS is the latest arrival time accepted, seconds: 2^32 s (136
// years, past every epoch-seconds clock of this century), beyond which a
// float64 time in seconds keeps less than a microsecond (its spacing there
// is 2^-20 s), and latencies computed from it come out rounded or zero.
const MaxArrivalS = 1 << 32

// Validate checks the kind and its parameters.
func (a Arrivals) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("arrivals %s: %s", a, fmt.Sprintf(format, args...))
	}
	if math.IsNaN(a.RateRPS) || math.IsInf(a.RateRPS, 0) || a.RateRPS < 0 {
		return bad("rate must be a finite number >= 0, got %g", a.RateRPS)
	}
	if a.RateRPS > 0 && a.RateRPS < MinRatePerS {
		return bad("rate %g requests/s is below %g (one request in %.1f days): a time scale no run spans; give requests/s", a.RateRPS, MinRatePerS, 1/MinRatePerS/86400)
	}
	if math.IsNaN(a.CV) || math.IsInf(a.CV, 0) || a.CV < 0 {
		return bad("CV must be a finite number >= 0, got %g", a.CV)
	}
	switch a.Kind {
	case ArrivalsNone, ArrivalsReplay:
		if a.Kind == ArrivalsNone && a.RateRPS != 0 {
			return bad("a rate needs an arrival process (poisson, gamma or replay)")
		}
	case ArrivalsPoisson, ArrivalsGamma:
		if a.RateRPS <= 0 {
			return bad("needs a rate > 0 requests/s")
		}
	case ArrivalsStages:
		if a.RateRPS != 0 {
			return bad("the stages give the rates: no single rate")
		}
		if err := validateStages(a.Stages); err != nil {
			return bad("%v", err)
		}
	default:
		return fmt.Errorf("unknown arrival process %q: want replay, poisson, gamma or stages", a.Kind)
	}
	if len(a.Stages) > 0 && a.Kind != ArrivalsStages {
		return bad("rate stages apply to stages arrivals only")
	}
	if a.CV != 0 && a.Kind != ArrivalsGamma {
		return bad("CV applies to gamma arrivals only")
	}
	return nil
}

// String describes the process, e.g. "poisson 4 req/s".
func (a Arrivals) String() string {
	switch a.Kind {
	case ArrivalsNone:
		return "none"
	case ArrivalsReplay:
		if a.RateRPS == 0 {
			return "replay"
		}
		return fmt.Sprintf("replay scaled to %.6g req/s", a.RateRPS)
	case ArrivalsGamma:
		return fmt.Sprintf("gamma %.6g req/s CV %.6g", a.RateRPS, a.CV)
	case ArrivalsStages:
		return "stages " + stagesString(a.Stages)
	}
	return fmt.Sprintf("%s %.6g req/s", a.Kind, a.RateRPS)
}

// gammaVariate draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// (shape < 1 is boosted: X = Y U^(1/shape), Y ~ Gamma(shape+1)).
func gammaVariate(r *rand.Rand, shape float64) float64 {
	boost := 1.0
	if shape < 1 {
		boost = math.Pow(r.Float64(), 1/shape)
		shape++
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v * boost
		}
	}
}

// ArrivalChoice is what a user asked of the arrivals: PickArrivals turns
// it into an arrival process for a workload.
type ArrivalChoice struct {
	// Kind names the process ("" to pick one; "none" for ArrivalsNone).
	Kind string
	// RateRPS is the rate asked for; HasRate says whether one was asked
	// (a command line may ask for rate 0).
	RateRPS float64
	HasRate bool
	// Stages, when given, are rate stages (ParseStages).
	Stages []RateStage
	// CV, when HasCV, is the gamma arrivals' coefficient of variation.
	CV    float64
	HasCV bool
	// ReplayRecorded: without a rate, a workload with recorded arrival
	// times (a built-in one sampled from a real trace) replays them
	// ('ftk datasets make'); without it, its requests all arrive at time
	// zero ('ftk simulate').
	ReplayRecorded bool
}

// PickArrivals is ftk's one rule for the arrival process of a workload
// when none is named: rate stages when given; gamma when a CV is given; a
// trace file with recorded times replays them (rescaled to the rate, if
// any); a rate gives Poisson arrivals; otherwise recorded times are
// replayed under ReplayRecorded, and every request arrives at time zero
// (ArrivalsNone) when there are none to replay.
func PickArrivals(w Workload, c ArrivalChoice) Arrivals {
	kind := c.Kind
	switch {
	case kind == "none":
		kind = ArrivalsNone
	case kind != "":
	case len(c.Stages) > 0:
		kind = ArrivalsStages
	case c.HasCV:
		kind = ArrivalsGamma
	case w.Kind == KindTrace && w.HasArrivals():
		kind = ArrivalsReplay // rescaled to the rate, if any
	case c.HasRate:
		kind = ArrivalsPoisson
	case c.ReplayRecorded && w.HasArrivals():
		kind = ArrivalsReplay
	default:
		kind = ArrivalsNone
	}
	return Arrivals{Kind: kind, RateRPS: c.RateRPS, CV: c.CV, Stages: c.Stages}
}
