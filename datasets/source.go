package datasets

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ftk-dev/ftk/spec"
)

// PCG stream constants: lengths and arrival gaps use separate streams of
// the same seed, so changing the arrival process never changes the lengths.
const (
	lengthStream  = 0x6c656e67746873 // "lengths"
	arrivalStream = 0x61727269766c73 // "arrivls"
)

// Source generates the requests of a workload and arrival process one at a
// time, so that a simulation of millions of requests need not hold them
// all. It is deterministic for a seed. A Source is not safe for concurrent
// use. A Source of a trace file (trace:PATH) reads its rows as it returns
// them and closes the file after the last; one dropped before leaves the
// file to the garbage collector, which closes it.
type Source struct {
	w       Workload
	a       Arrivals
	n, i    int
	inOrder bool // lengths (and recorded arrivals) come from the trace rows in order
	lengths *rand.Rand
	gaps    *rand.Rand
	nextS   float64      // unrounded arrival time of the next generated request
	t0      float64      // first recorded arrival (replay)
	scale   float64      // factor on recorded gaps (replay)
	shape   float64      // gamma shape 1/CV^2; 0 for constant gaps
	deck    *deck        // system prompts of a conversation workload
	trace   *TraceReader // the rows of a trace file, read as they are replayed
	err     error        // why the rows of a trace file ended early
}

// NewSource returns a Source of n requests of workload w arriving by a,
// deterministic for seed (math/rand/v2 PCG).
//
// Lengths: a fixed workload repeats its lengths; a sampled (built-in)
// workload draws (prompt, output) pairs uniformly with replacement from its
// trace; a trace:PATH workload takes its rows in order, as does any workload
// under replay arrivals (so "splitwise-conv" replayed is the recorded trace
// itself); a shared-prefix workload deals each request a system prompt
// (Conversation; sessions of several turns need Clients instead). In-order sources accept n <= 0 for "all rows" and refuse n above
// the row count; the others need n >= 1.
//
// Arrivals: see Arrivals. Generated and rescaled times are rounded to whole
// microseconds, the precision of the real traces, so written traces stay
// short and readable.
// Request IDs are 0..n-1.
func NewSource(w Workload, a Arrivals, n int, seed uint64) (*Source, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	s := &Source{
		w: w, a: a, n: n, scale: 1,
		lengths: rand.New(rand.NewPCG(seed, lengthStream)),
		gaps:    rand.New(rand.NewPCG(seed, arrivalStream)),
	}
	switch w.Kind {
	case KindFixed:
		if w.PromptTokens < 1 || w.OutputTokens < 1 {
			return nil, fmt.Errorf("workload %s: lengths must be >= 1", w)
		}
	case KindConversation:
		if w.Conversation.Turns > 1 {
			return nil, fmt.Errorf("workload %s: sessions of %d turns wait for each reply: run them with clients (closed loop), not open-loop arrivals", w, w.Conversation.Turns)
		}
		s.deck = newDeck(&w.Conversation, s.lengths)
	case KindTrace:
		if w.trace == nil {
			return nil, fmt.Errorf("workload %s: trace file not read (make workloads with ParseWorkload)", w)
		}
	case KindSampled:
		if len(w.reqs) == 0 {
			return nil, fmt.Errorf("workload %s: no trace rows loaded (make workloads with ParseWorkload)", w)
		}
	default:
		return nil, errors.New("workload not set: make workloads with ParseWorkload")
	}
	if a.Kind == ArrivalsReplay && !w.HasArrivals() {
		return nil, fmt.Errorf("workload %s has no recorded arrival times to replay: use poisson or gamma arrivals with a rate", w)
	}
	s.inOrder = w.Kind == KindTrace || a.Kind == ArrivalsReplay
	if s.inOrder {
		rows := w.Rows()
		if n <= 0 {
			s.n = rows
		} else if n > rows {
			return nil, fmt.Errorf("workload %s replays its %d rows in order: asked for %d requests", w, rows, n)
		}
	} else if n < 1 {
		return nil, fmt.Errorf("workload %s: number of requests must be >= 1, got %d", w, n)
	}
	switch a.Kind {
	case ArrivalsReplay:
		s.t0 = s.firstArrival()
		if a.RateRPS > 0 {
			last, err := s.lastArrival()
			if err != nil {
				return nil, fmt.Errorf("workload %s: %w", w, err)
			}
			span := last - s.t0
			if s.n < 2 || span <= 0 {
				return nil, fmt.Errorf("workload %s: cannot scale replayed arrivals to %g req/s: the first %d requests span %g s", w, a.RateRPS, s.n, span)
			}
			s.scale = float64(s.n-1) / span / a.RateRPS
		}
	case ArrivalsGamma:
		if a.CV > 0 {
			s.shape = 1 / (a.CV * a.CV)
		}
	case ArrivalsStages: // the first arrival too follows the first stage's rate
		s.nextS = stagesNext(a.Stages, 0, s.gaps.ExpFloat64())
	}
	if w.trace != nil && s.inOrder {
		var err error
		if s.trace, err = OpenTrace(w.Path); err != nil {
			return nil, fmt.Errorf("workload %s: %w", w, err)
		}
	}
	return s, nil
}

// firstArrival returns the first recorded arrival.
func (s *Source) firstArrival() float64 {
	if s.w.trace != nil {
		return s.w.trace.firstS
	}
	return s.w.reqs[0].ArrivalS
}

// lastArrival returns the recorded arrival of the source's last request.
func (s *Source) lastArrival() (float64, error) {
	switch {
	case s.w.trace == nil:
		return s.w.reqs[s.n-1].ArrivalS, nil
	case s.n == s.w.trace.rows:
		return s.w.trace.lastS, nil
	}
	return traceArrivalAt(s.w.Path, s.n-1)
}

// Len returns the number of requests the source yields in all.
func (s *Source) Len() int { return s.n }

// Next returns the next request, or false when all have been returned (or
// a trace file's rows ended early: see Err). It does not allocate, except
// for the hash ids of a trace file's row.
func (s *Source) Next() (spec.Request, bool) {
	if s.i >= s.n {
		return spec.Request{}, false
	}
	i := s.i
	s.i++
	var r spec.Request
	switch {
	case s.w.Kind == KindFixed:
		r = spec.Request{PromptTokens: s.w.PromptTokens, OutputTokens: s.w.OutputTokens}
	case s.deck != nil:
		s.w.Conversation.fill(&r, i, 1, s.deck.deal())
	case s.trace != nil:
		var ok bool
		if r, ok = s.trace.Next(); !ok {
			s.err = s.trace.Err()
			if s.err == nil {
				s.err = fmt.Errorf("workload %s: the trace ended after %d of %d rows: was the file changed during the run?", s.w, i, s.n)
			}
			s.i = s.n
			return spec.Request{}, false
		}
		if s.i == s.n {
			s.trace.Close()
		}
	case s.inOrder:
		r = s.w.reqs[i]
	default:
		r = s.w.reqs[s.lengths.IntN(len(s.w.reqs))]
	}
	r.ID = i
	switch s.a.Kind {
	case ArrivalsNone:
		r.ArrivalS = math.NaN()
	case ArrivalsReplay:
		if s.scale != 1 {
			r.ArrivalS = roundMicro(s.t0 + (r.ArrivalS-s.t0)*s.scale)
		}
	default:
		r.ArrivalS = roundMicro(s.nextS)
		s.nextS += s.gap()
	}
	return r, true
}

// gap draws the next inter-arrival time in seconds.
func (s *Source) gap() float64 {
	rate := s.a.RateRPS
	if s.a.Kind == ArrivalsStages {
		return stagesNext(s.a.Stages, s.nextS, s.gaps.ExpFloat64()) - s.nextS
	}
	if s.a.Kind == ArrivalsPoisson {
		return s.gaps.ExpFloat64() / rate
	}
	if s.shape == 0 {
		return 1 / rate
	}
	return gammaVariate(s.gaps, s.shape) / (s.shape * rate)
}

func roundMicro(t float64) float64 { return math.Round(t*1e6) / 1e6 }

// Generate returns n requests of workload w arriving by a (see NewSource),
// identical for identical arguments.
func Generate(w Workload, a Arrivals, n int, seed uint64) ([]spec.Request, error) {
	src, err := NewSource(w, a, n, seed)
	if err != nil {
		return nil, err
	}
	reqs := make([]spec.Request, 0, src.Len())
	for r, ok := src.Next(); ok; r, ok = src.Next() {
		reqs = append(reqs, r)
	}
	return reqs, nil
}
