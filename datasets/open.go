package datasets

import (
	"errors"
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// OpenRun returns the arrivals of a simulation, streamed, and how many
// requests they hold:
//
//   - a trace file (trace) replays its rows in order, with its recorded
//     arrival times (scaled to ratePerS when that is positive) or, for a
//     trace without times, Poisson arrivals at ratePerS;
//   - a workload (fixed:PxO, splitwise-conv, ..., trace:PATH; see
//     ParseWorkload) arrives as a Poisson process at ratePerS.
//
// With no rate and no recorded times every request arrives at time zero,
// like vLLM's benchmark with an infinite rate. n is the number of requests
// (0: every row of a trace).
func OpenRun(trace, workload string, ratePerS float64, n int, seed uint64) (RequestStream, int, error) {
	return RunArrivals{Trace: trace, Workload: workload, RatePerS: ratePerS, N: n, Seed: seed}.Open()
}

// RunArrivals names a simulation's arrivals: OpenRun's arguments, rate
// stages, and closed-loop clients.
type RunArrivals struct {
	Trace, Workload string
	RatePerS        float64
	// Stages replace RatePerS by rates that change over time
	// (ParseStages).
	Stages string
	// Clients, when positive, sends the requests from that many
	// closed-loop clients (Clients); the rate or stages then pace their
	// session starts. ThinkS is their mean think time between turns.
	Clients int
	ThinkS  float64
	N       int
	Seed    uint64
}

// ErrNoArrivals is RunArrivals.Open's error when neither a trace nor a
// workload is named.
var ErrNoArrivals = errors.New("simulate workload: no arrivals: give a trace file or a generated workload")

// Open opens the arrivals (see OpenRun). With Clients the stream is a
// *Clients, which the simulator tells of every completion.
func (r RunArrivals) Open() (RequestStream, int, error) {
	wl, a, err := r.process(ParseWorkload)
	if err != nil {
		return nil, 0, err
	}
	if r.Clients > 0 {
		c, err := NewClients(wl, a, r.Clients, r.N, r.ThinkS, r.Seed)
		if err != nil {
			return nil, 0, fmt.Errorf("simulate workload: %w", err)
		}
		return c, c.Len(), nil
	}
	src, err := NewSource(wl, a, r.N, r.Seed)
	if err != nil {
		return nil, 0, fmt.Errorf("simulate workload: %w", err)
	}
	if a.Kind == ArrivalsNone {
		return atTimeZero{src}, src.Len(), nil
	}
	return src, src.Len(), nil
}

// process parses the workload with parse and picks the arrival process
// Open uses.
func (r RunArrivals) process(parse func(string) (Workload, error)) (Workload, Arrivals, error) {
	switch {
	case r.Trace == "" && r.Workload == "":
		return Workload{}, Arrivals{}, ErrNoArrivals
	case r.Trace != "" && r.Workload != "":
		return Workload{}, Arrivals{}, fmt.Errorf("simulate workload: give a trace file or a generated workload, not both")
	case r.Stages != "" && r.RatePerS != 0:
		return Workload{}, Arrivals{}, fmt.Errorf("simulate workload: give a rate or rate stages, not both")
	case r.ThinkS != 0 && r.Clients == 0:
		return Workload{}, Arrivals{}, fmt.Errorf("simulate workload: a think time needs closed-loop clients (--clients N)")
	}
	name := r.Workload
	if r.Trace != "" {
		name = "trace:" + r.Trace
	}
	wl, err := parse(name)
	if err != nil {
		return Workload{}, Arrivals{}, err
	}
	c := ArrivalChoice{RateRPS: r.RatePerS, HasRate: r.RatePerS != 0}
	if r.Stages != "" {
		if c.Stages, err = ParseStages(r.Stages); err != nil {
			return Workload{}, Arrivals{}, fmt.Errorf("simulate workload: %w", err)
		}
	}
	return wl, PickArrivals(wl, c), nil
}

// Describe says how the requests of Open arrive, as simulate's summary
// prints it: "poisson 4 req/s", "replay (the trace's recorded times)",
// "all at t=0 (no rate: an offline batch, as vllm bench serve
// --request-rate inf)", or the closed loop of --clients.
func (r RunArrivals) Describe() (string, error) {
	_, a, err := r.process(peekWorkload)
	if err != nil {
		return "", err
	}
	var d string
	switch {
	case a.Kind == ArrivalsNone && r.Clients > 0:
		d = "back to back"
	case a.Kind == ArrivalsNone:
		d = AllAtZero
	case a.Kind == ArrivalsReplay && a.RateRPS == 0:
		d = "replay (the trace's recorded times)"
	default:
		d = a.String()
	}
	if r.Clients > 0 {
		d = fmt.Sprintf("closed loop: %d clients, think time %g s, session starts %s", r.Clients, r.ThinkS, d)
	}
	return d, nil
}

// AllAtZero is Describe's words for arrivals without a rate or recorded
// times: every request at time zero.
const AllAtZero = "all at t=0 (no rate: an offline batch, as vllm bench serve --request-rate inf)"

// RequestStream yields requests in arrival order; Err reports a failure
// that ended the stream early.
type RequestStream interface {
	Next() (spec.Request, bool)
	Err() error
}

// Err implements RequestStream: why the rows of a trace file ended before
// the source's last request (a read error, or a file changed during the
// run); nil otherwise.
func (s *Source) Err() error { return s.err }

// atTimeZero gives requests without arrival times (NaN) time zero: every
// request arrives at once.
type atTimeZero struct{ *Source }

func (z atTimeZero) Next() (spec.Request, bool) {
	r, ok := z.Source.Next()
	if math.IsNaN(r.ArrivalS) {
		r.ArrivalS = 0
	}
	return r, ok
}
