package datasets

import (
	"bytes"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk"
	"github.com/ftk-dev/ftk/spec"
)

func mustWorkload(t testing.TB, spec string) Workload {
	t.Helper()
	w, err := ParseWorkload(spec)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestParseWorkload(t *testing.T) {
	tracePath(t, "splitwise_conv.csv")
	for _, tc := range []struct {
		spec          string
		kind          string
		prompt, out   int
		rows          int
		hasArrivals   bool
		wantErrSubstr string
	}{
		{spec: "fixed:1024x1024", kind: KindFixed, prompt: 1024, out: 1024},
		{spec: "fixed:1024x256", kind: KindFixed, prompt: 1024, out: 256},
		{spec: "fixed:256x1024", kind: KindFixed, prompt: 256, out: 1024},
		{spec: "fixed:1x1", kind: KindFixed, prompt: 1, out: 1},
		{spec: "splitwise-conv", kind: KindSampled, rows: 19366, hasArrivals: true},
		{spec: "splitwise-code", kind: KindSampled, rows: 8819, hasArrivals: true},
		{spec: "arxiv-summarization", kind: KindSampled, rows: 28257},
		{spec: "trace:" + filepath.Join(sharedDir, "traces", "splitwise_code.csv"), kind: KindTrace, rows: 8819, hasArrivals: true},
		{spec: "fixed:0x5", wantErrSubstr: "want fixed:PxO"},
		{spec: "fixed:10", wantErrSubstr: "want fixed:PxO"},
		{spec: "fixed:axb", wantErrSubstr: "want fixed:PxO"},
		{spec: "fixed:-1x5", wantErrSubstr: "want fixed:PxO"},
		{spec: "trace:", wantErrSubstr: "want trace:PATH"},
		{spec: "trace:/no/such.csv", wantErrSubstr: "no such file"},
		{spec: "sharegpt", wantErrSubstr: `unknown workload "sharegpt": want fixed:PxO, splitwise-conv, splitwise-code, arxiv-summarization, trace:PATH, shared-prefix:... or sessions:...`},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			w, err := ParseWorkload(tc.spec)
			if tc.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
					t.Fatalf("error %v, want %q", err, tc.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Kind != tc.kind || w.PromptTokens != tc.prompt || w.OutputTokens != tc.out || w.Rows() != tc.rows || w.HasArrivals() != tc.hasArrivals || w.String() != tc.spec {
				t.Errorf("got %s kind %s %dx%d rows %d arrivals %v", w, w.Kind, w.PromptTokens, w.OutputTokens, w.Rows(), w.HasArrivals())
			}
		})
	}
}

// TestBuiltinsEmbedded: the built-in workloads read the traces the binary
// embeds, from any folder, with no shared or testdata folder beside it
// (they needed a checkout's testdata/ or $FTK_SHARED before); the
// embedded copy is the repository's testdata/traces file, byte for byte.
func TestBuiltinsEmbedded(t *testing.T) {
	for _, b := range Builtins() {
		want, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(b.File)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(ftk.Traces, b.File)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: embedded %s differs from the repository's (%v)", b.Name, b.File, err)
		}
	}
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name string
		rows int
	}{{"splitwise-conv", 19366}, {"splitwise-code", 8819}, {"arxiv-summarization", 28257}} {
		w, err := ParseWorkload(tc.name)
		if err != nil || len(w.Requests()) != tc.rows {
			t.Errorf("%s outside the checkout: %d rows, %v; want %d", tc.name, len(w.Requests()), err, tc.rows)
		}
	}
}

// interArrival returns the mean rate ((n-1)/span) and the CV of the gaps.
func interArrival(reqs []spec.Request) (rate, cv float64) {
	st := ComputeStats(reqs)
	return st.RateRPS, st.InterArrivalCV
}

// TestArrivalProcesses checks the rate and CV of generated arrivals on
// large samples. With 200,000 gaps the standard error of the mean is
// CV/sqrt(n) (0.2% for CV 1), so the tolerances are many sigmas wide.
func TestArrivalProcesses(t *testing.T) {
	w := mustWorkload(t, "fixed:100x10")
	const n = 200_000
	for _, tc := range []struct {
		a              Arrivals
		rateTol, cvTol float64 // relative
	}{
		{Arrivals{Kind: ArrivalsPoisson, RateRPS: 5}, 0.015, 0.02},
		{Arrivals{Kind: ArrivalsPoisson, RateRPS: 1234}, 0.015, 0.02},
		{Arrivals{Kind: ArrivalsGamma, RateRPS: 8, CV: 1}, 0.015, 0.02},
		{Arrivals{Kind: ArrivalsGamma, RateRPS: 8, CV: 2}, 0.03, 0.04},
		{Arrivals{Kind: ArrivalsGamma, RateRPS: 8, CV: 0.5}, 0.01, 0.02},
		{Arrivals{Kind: ArrivalsGamma, RateRPS: 3, CV: 4}, 0.06, 0.08},
	} {
		t.Run(tc.a.String(), func(t *testing.T) {
			reqs, err := Generate(w, tc.a, n, 42)
			if err != nil {
				t.Fatal(err)
			}
			if reqs[0].ArrivalS != 0 {
				t.Errorf("first arrival %g, want 0", reqs[0].ArrivalS)
			}
			wantCV := tc.a.CV
			if tc.a.Kind == ArrivalsPoisson {
				wantCV = 1
			}
			rate, cv := interArrival(reqs)
			t.Logf("%s: measured rate %.4f req/s, CV %.4f over %d requests", tc.a, rate, cv, n)
			if math.Abs(rate/tc.a.RateRPS-1) > tc.rateTol {
				t.Errorf("rate %.4f, want %g ± %.1f%%", rate, tc.a.RateRPS, 100*tc.rateTol)
			}
			if math.Abs(cv/wantCV-1) > tc.cvTol {
				t.Errorf("CV %.4f, want %g ± %.1f%%", cv, wantCV, 100*tc.cvTol)
			}
			for i, r := range reqs {
				if r.ID != i || r.PromptTokens != 100 || r.OutputTokens != 10 || (i > 0 && r.ArrivalS < reqs[i-1].ArrivalS) || r.ArrivalS != roundMicro(r.ArrivalS) {
					t.Fatalf("request %d: %+v", i, r)
				}
			}
		})
	}
}

func TestConstantGaps(t *testing.T) {
	reqs, err := Generate(mustWorkload(t, "fixed:1x1"), Arrivals{Kind: ArrivalsGamma, RateRPS: 4, CV: 0}, 101, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if r.ArrivalS != float64(i)*0.25 {
			t.Fatalf("request %d at %g s, want %g", i, r.ArrivalS, float64(i)*0.25)
		}
	}
}

// TestSampledLengths checks that a built-in workload draws real (prompt,
// output) pairs and matches the trace's means on a large sample.
func TestSampledLengths(t *testing.T) {
	for _, name := range []string{"splitwise-conv", "arxiv-summarization"} {
		t.Run(name, func(t *testing.T) {
			w := mustWorkload(t, name)
			pairs := map[[2]int]bool{}
			var meanP, meanO float64
			for _, r := range w.Requests() {
				pairs[[2]int{r.PromptTokens, r.OutputTokens}] = true
				meanP += float64(r.PromptTokens) / float64(len(w.Requests()))
				meanO += float64(r.OutputTokens) / float64(len(w.Requests()))
			}
			reqs, err := Generate(w, Arrivals{Kind: ArrivalsPoisson, RateRPS: 10}, 100_000, 3)
			if err != nil {
				t.Fatal(err)
			}
			st := ComputeStats(reqs)
			for _, r := range reqs {
				if !pairs[[2]int{r.PromptTokens, r.OutputTokens}] {
					t.Fatalf("request %+v: pair not in the trace", r)
				}
			}
			if math.Abs(st.Prompt.Mean/meanP-1) > 0.02 || math.Abs(st.Output.Mean/meanO-1) > 0.03 {
				t.Errorf("sample means %.1f/%.1f, trace %.1f/%.1f", st.Prompt.Mean, st.Output.Mean, meanP, meanO)
			}
		})
	}
}

// TestReplay checks that replaying a built-in trace gives the recorded
// trace, and that a rate rescales it exactly.
func TestReplay(t *testing.T) {
	rows, err := ReadTrace(tracePath(t, "splitwise_conv.csv"))
	if err != nil {
		t.Fatal(err)
	}
	w := mustWorkload(t, "splitwise-conv")
	got, err := Generate(w, Arrivals{Kind: ArrivalsReplay}, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !requestsEqual(got, rows) {
		t.Fatal("replay differs from the recorded trace")
	}
	first, err := Generate(w, Arrivals{Kind: ArrivalsReplay}, 100, 1)
	if err != nil || !requestsEqual(first, rows[:100]) {
		t.Fatalf("replay of 100: %v", err)
	}
	scaled, err := Generate(w, Arrivals{Kind: ArrivalsReplay, RateRPS: 20}, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	rate, cv := interArrival(scaled)
	_, cv0 := interArrival(rows)
	if math.Abs(rate/20-1) > 1e-6 || math.Abs(cv/cv0-1) > 1e-3 {
		t.Errorf("rescaled replay: rate %.6f (want 20), CV %.4f (recorded %.4f)", rate, cv, cv0)
	}
	for i := range scaled {
		if scaled[i].PromptTokens != rows[i].PromptTokens || scaled[i].OutputTokens != rows[i].OutputTokens {
			t.Fatalf("request %d: lengths changed by rescaling", i)
		}
	}
	// A trace workload keeps its order under generated arrivals.
	tw := mustWorkload(t, "trace:"+tracePath(t, "splitwise_code.csv"))
	code, err := ReadTrace(tracePath(t, "splitwise_code.csv"))
	if err != nil {
		t.Fatal(err)
	}
	pois, err := Generate(tw, Arrivals{Kind: ArrivalsPoisson, RateRPS: 2}, 50, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range pois {
		if r.PromptTokens != code[i].PromptTokens {
			t.Fatalf("trace workload request %d not in order", i)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	fixed := mustWorkload(t, "fixed:8x8")
	arxiv := mustWorkload(t, "arxiv-summarization")
	code := mustWorkload(t, "splitwise-code")
	for _, tc := range []struct {
		name string
		w    Workload
		a    Arrivals
		n    int
		want string
	}{
		{"replay without recorded times", fixed, Arrivals{Kind: ArrivalsReplay}, 10, "no recorded arrival times"},
		{"replay of a length-only trace", arxiv, Arrivals{Kind: ArrivalsReplay}, 10, "no recorded arrival times"},
		{"more than recorded", code, Arrivals{Kind: ArrivalsReplay}, 9000, "replays its 8819 rows in order: asked for 9000"},
		{"no count", fixed, Arrivals{Kind: ArrivalsPoisson, RateRPS: 1}, 0, "must be >= 1"},
		{"poisson without rate", fixed, Arrivals{Kind: ArrivalsPoisson}, 10, "needs a rate > 0"},
		{"negative rate", fixed, Arrivals{Kind: ArrivalsGamma, RateRPS: -1, CV: 1}, 10, "rate must be"},
		{"NaN CV", fixed, Arrivals{Kind: ArrivalsGamma, RateRPS: 1, CV: math.NaN()}, 10, "CV must be"},
		{"CV on poisson", fixed, Arrivals{Kind: ArrivalsPoisson, RateRPS: 1, CV: 2}, 10, "CV applies to gamma"},
		{"rate without process", fixed, Arrivals{RateRPS: 1}, 10, "needs an arrival process"},
		{"unknown kind", fixed, Arrivals{Kind: "uniform", RateRPS: 1}, 10, `unknown arrival process "uniform"`},
		{"zero workload", Workload{}, Arrivals{}, 10, "make workloads with ParseWorkload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.w, tc.a, tc.n, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestGenerateDeterminism checks that a seed fixes the output bytes, that
// another seed changes them, and that lengths do not depend on the arrival
// process.
func TestGenerateDeterminism(t *testing.T) {
	w := mustWorkload(t, "splitwise-conv")
	dir := t.TempDir()
	write := func(name string, a Arrivals, seed uint64) []byte {
		reqs, err := Generate(w, a, 3000, seed)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := WriteTrace(p, reqs); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gamma := Arrivals{Kind: ArrivalsGamma, RateRPS: 6, CV: 2.5}
	a, b := write("a.csv", gamma, 7), write("b.csv", gamma, 7)
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different bytes")
	}
	if bytes.Equal(a, write("c.csv", gamma, 8)) {
		t.Error("different seeds gave the same bytes")
	}
	g, _ := Generate(w, gamma, 3000, 7)
	p, _ := Generate(w, Arrivals{Kind: ArrivalsPoisson, RateRPS: 1}, 3000, 7)
	none, _ := Generate(w, Arrivals{}, 3000, 7)
	for i := range g {
		if g[i].PromptTokens != p[i].PromptTokens || g[i].OutputTokens != none[i].OutputTokens || !math.IsNaN(none[i].ArrivalS) {
			t.Fatalf("request %d: lengths depend on the arrival process", i)
		}
	}
}

// TestSourceNextDoesNotAllocate streams a million requests, allocating
// nothing per request.
func TestSourceNextDoesNotAllocate(t *testing.T) {
	for _, spec := range []string{"splitwise-conv", "fixed:1024x256"} {
		src, err := NewSource(mustWorkload(t, spec), Arrivals{Kind: ArrivalsGamma, RateRPS: 100, CV: 0.7}, 1_000_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(1000, func() { src.Next() })
		if allocs != 0 {
			t.Errorf("%s: Next allocates %.1f times per call", spec, allocs)
		}
		n := 1001 // AllocsPerRun calls once more to warm up
		last := -1.0
		for r, ok := src.Next(); ok; r, ok = src.Next() {
			if r.ArrivalS < last {
				t.Fatalf("request %d arrives before the previous", r.ID)
			}
			last = r.ArrivalS
			n++
		}
		if n != 1_000_000 || src.Len() != 1_000_000 {
			t.Errorf("%s: streamed %d requests, Len %d", spec, n, src.Len())
		}
	}
}

// TestParseDecimalFastMatchesStrconv checks the fast path of arrival
// parsing against strconv.ParseFloat on random decimals.
func TestParseDecimalFastMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		var s string
		switch i % 3 {
		case 0:
			s = strconv.FormatFloat(r.Float64()*1e4, 'f', r.IntN(12), 64)
		case 1:
			s = strconv.FormatFloat(r.ExpFloat64()*10, 'f', -1, 64)
		default:
			s = strconv.Itoa(r.IntN(1e9)) + "." + strconv.Itoa(r.IntN(1e6))
		}
		want, _ := strconv.ParseFloat(s, 64)
		if got, ok := parseDecimalFast([]byte(s)); ok && got != want {
			t.Fatalf("parseDecimalFast(%q) = %v, strconv says %v", s, got, want)
		}
	}
}

// BenchmarkSource reports requests generated per second.
func BenchmarkSource(b *testing.B) {
	w := mustWorkload(b, "splitwise-conv")
	src, err := NewSource(w, Arrivals{Kind: ArrivalsGamma, RateRPS: 100, CV: 2}, 1<<62, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		src.Next()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
