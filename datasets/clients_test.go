package datasets

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// serveClients drives c against a server that answers every request
// serviceS seconds after it arrives, however many are in flight, and
// returns the requests in the order sent with their finish times.
func serveClients(t *testing.T, c *Clients, serviceS float64) ([]spec.Request, []float64) {
	t.Helper()
	var sent []spec.Request
	var finish []float64
	type done struct {
		atS float64
		id  int
	}
	var pending []done
	pull := func(nowS float64) {
		for r, ok := c.Next(); ok; r, ok = c.Next() {
			if r.ArrivalS < nowS || r.ID != len(sent) {
				t.Fatalf("request %d (sent %d) arrives at %g, before now %g", r.ID, len(sent), r.ArrivalS, nowS)
			}
			sent = append(sent, r)
			finish = append(finish, r.ArrivalS+serviceS)
			pending = append(pending, done{r.ArrivalS + serviceS, r.ID})
		}
	}
	pull(0)
	for len(pending) > 0 {
		sort.Slice(pending, func(i, j int) bool {
			return pending[i].atS < pending[j].atS || (pending[i].atS == pending[j].atS && pending[i].id < pending[j].id)
		})
		d := pending[0]
		pending = pending[1:]
		c.Complete(d.id, d.atS)
		pull(d.atS)
	}
	return sent, finish
}

// maxInFlight is the most requests between arrival and finish at once.
func maxInFlight(sent []spec.Request, finish []float64) int {
	most := 0
	for _, r := range sent {
		n := 0
		for j, q := range sent {
			if q.ArrivalS <= r.ArrivalS && finish[j] > r.ArrivalS {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func TestClientsSessions(t *testing.T) {
	w := mustWorkload(t, "sessions:groups=3,users=2,system=100,turns=4,question=20,output=10")
	c, err := NewClients(w, Arrivals{}, 5, 40, 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	sent, finish := serveClients(t, c, 1)
	if len(sent) != 40 {
		t.Fatalf("%d requests sent, want 40", len(sent))
	}
	if got := maxInFlight(sent, finish); got != 5 {
		t.Fatalf("%d requests in flight at most, want the 5 clients", got)
	}
	// Each session's turns: prompts grow by question + output, the same
	// system prompt, each turn after the last one's reply plus think time.
	bySession := map[uint64][]int{}
	for i, r := range sent {
		bySession[r.Session] = append(bySession[r.Session], i)
	}
	thinks := 0
	for s, idx := range bySession {
		for k, i := range idx {
			r := sent[i]
			if r.Turn != k+1 || r.PromptTokens != 100+k*30+20 || r.OutputTokens != 10 || r.PrefixTokens != 100 || r.PrefixGroup != sent[idx[0]].PrefixGroup {
				t.Fatalf("session %d turn %d: %+v", s, k+1, r)
			}
			if k > 0 {
				prev := finish[idx[k-1]]
				if r.ArrivalS < prev {
					t.Fatalf("session %d turn %d sent at %g before the reply at %g", s, k+1, r.ArrivalS, prev)
				}
				if r.ArrivalS > prev {
					thinks++
				}
			}
		}
		if len(idx) > 4 {
			t.Fatalf("session %d has %d turns", s, len(idx))
		}
	}
	if thinks == 0 {
		t.Fatal("no think time between turns")
	}
	// Deterministic.
	c2, _ := NewClients(w, Arrivals{}, 5, 40, 2, 7)
	again, _ := serveClients(t, c2, 1)
	if !reflect.DeepEqual(sent, again) {
		t.Fatal("same seed, different requests")
	}
}

func TestClientsMaxConcurrency(t *testing.T) {
	// vllm bench serve --max-concurrency 3 at an infinite rate: three
	// back-to-back clients; with a Poisson rate, each request waits for a
	// free client.
	w := mustWorkload(t, "splitwise-conv")
	c, err := NewClients(w, Arrivals{}, 3, 30, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	sent, finish := serveClients(t, c, 2)
	if len(sent) != 30 || maxInFlight(sent, finish) != 3 {
		t.Fatalf("%d sent, %d in flight", len(sent), maxInFlight(sent, finish))
	}
	for i, r := range sent {
		if want := float64(i/3) * 2; r.ArrivalS != want {
			t.Fatalf("request %d at %g, want %g (back to back)", i, r.ArrivalS, want)
		}
	}
	starts := Arrivals{Kind: ArrivalsPoisson, RateRPS: 10}
	c, err = NewClients(w, starts, 2, 50, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	sent, finish = serveClients(t, c, 1)
	open, _ := Generate(w, starts, 50, 1)
	if len(sent) != 50 || maxInFlight(sent, finish) != 2 {
		t.Fatalf("%d sent, %d in flight", len(sent), maxInFlight(sent, finish))
	}
	for i, r := range sent {
		// Same lengths as the open-loop trace; sent at the drawn time or
		// when a client frees up (each client holds one of every two in
		// order here, since service takes longer than the gaps).
		if r.PromptTokens != open[i].PromptTokens || r.ArrivalS < open[i].ArrivalS {
			t.Fatalf("request %d: %+v, open-loop %+v", i, r, open[i])
		}
		if i >= 2 && r.ArrivalS != math.Max(open[i].ArrivalS, finish[i-2]) {
			t.Fatalf("request %d at %g, want max(%g, %g)", i, r.ArrivalS, open[i].ArrivalS, finish[i-2])
		}
	}
}

func TestConversationWorkloads(t *testing.T) {
	for _, tc := range []struct{ spec, err string }{
		{"shared-prefix:groups=4,users=8,system=1000,question=50,output=20", ""},
		{"sessions:groups=2,system=0,turns=3,question=50,output=20", ""},
		{"shared-prefix:groups=4,system=1000,question=50", "output is missing"},
		{"shared-prefix:groups=4,system=1000,question=50,output=20,turns=2", `unknown setting "turns=2"`},
		{"sessions:groups=0,system=10,question=5,output=5", "must be >= 1"},
		{"sessions:groups=1,system=10,question=x,output=5", `question="x" is not a count`},
	} {
		_, err := ParseWorkload(tc.spec)
		if (err == nil) != (tc.err == "") || (err != nil && !contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.err)
		}
	}
	// Open loop, one deck: every system prompt serves exactly its users.
	w := mustWorkload(t, "shared-prefix:groups=4,users=8,system=1000,question=50,output=20")
	reqs, err := Generate(w, Arrivals{Kind: ArrivalsPoisson, RateRPS: 5}, 32, 3)
	if err != nil {
		t.Fatal(err)
	}
	count := map[uint64]int{}
	for _, r := range reqs {
		if r.PromptTokens != 1050 || r.PrefixTokens != 1000 || r.Session != 0 {
			t.Fatalf("%+v", r)
		}
		count[r.PrefixGroup]++
	}
	if len(count) != 4 || count[1] != 8 || count[4] != 8 {
		t.Fatalf("groups dealt %v, want 8 of each of 4", count)
	}
	if _, err := NewSource(mustWorkload(t, "sessions:groups=1,system=10,turns=2,question=5,output=5"), Arrivals{Kind: ArrivalsPoisson, RateRPS: 1}, 10, 1); err == nil || !contains(err.Error(), "run them with clients") {
		t.Fatalf("open-loop sessions: error %v", err)
	}
}

func TestStagesArrivals(t *testing.T) {
	st, err := ParseStages("100s@2,50s@0,100s@10")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := Generate(mustWorkload(t, "fixed:10x10"), Arrivals{Kind: ArrivalsStages, Stages: st}, 1400, 5)
	if err != nil {
		t.Fatal(err)
	}
	var n [4]int
	for _, r := range reqs {
		switch {
		case r.ArrivalS < 100:
			n[0]++
		case r.ArrivalS < 150:
			n[1]++
		case r.ArrivalS < 250:
			n[2]++
		default:
			n[3]++
		}
	}
	// Poisson counts: 200 +- 3 sigma (42), none in the pause, 1000 +- 95,
	// the rest after at the last rate.
	if math.Abs(float64(n[0]-200)) > 42 || n[1] != 0 || math.Abs(float64(n[2]-1000)) > 95 || n[3] == 0 {
		t.Fatalf("arrivals per stage %v, want about 200, 0, 1000, rest", n)
	}
	for _, bad := range []string{"", "10@2", "10s@-1", "10s@2,5s@0", "0s@3"} {
		if _, err := ParseStages(bad); err == nil {
			t.Errorf("ParseStages(%q) accepted", bad)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestMoreClientsThanRequests: clients beyond the request count never
// send, so 2^40 clients for 30 requests (unpaced, paced, and sessions of
// several turns) send what 30 clients send, holding 30 (2^40 clients
// panicked in makeslice; 10^9 asked 32 GB).
func TestMoreClientsThanRequests(t *testing.T) {
	sessions := mustWorkload(t, "sessions:groups=2,users=3,system=40,turns=3,question=8,output=4")
	for _, tc := range []struct {
		w      Workload
		starts Arrivals
	}{
		{mustWorkload(t, "fixed:16x4"), Arrivals{Kind: ArrivalsNone}},
		{mustWorkload(t, "fixed:16x4"), Arrivals{Kind: ArrivalsPoisson, RateRPS: 50}},
		{sessions, Arrivals{Kind: ArrivalsNone}},
		{sessions, Arrivals{Kind: ArrivalsPoisson, RateRPS: 5}},
	} {
		const n = 30
		few, err := NewClients(tc.w, tc.starts, n, n, 0.5, 7)
		if err != nil {
			t.Fatal(err)
		}
		many, err := NewClients(tc.w, tc.starts, 1<<40, n, 0.5, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(many.clients) != n {
			t.Errorf("%s %s: %d clients made for %d requests", tc.w, tc.starts, len(many.clients), n)
		}
		a, fa := serveClients(t, few, 0.3)
		b, fb := serveClients(t, many, 0.3)
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(fa, fb) {
			t.Errorf("%s %s: 2^40 clients send other requests than %d", tc.w, tc.starts, n)
		}
	}
}
