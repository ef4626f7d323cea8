package datasets

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeRows writes a trace CSV of n rows (arrival i/10 s, prompt 100+i%7,
// output 1+i%5) and returns its path.
func writeRows(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rows.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "arrived_at,num_prefill_tokens,num_decode_tokens")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "%g,%d,%d\n", float64(i)/10, 100+i%7, 1+i%5)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// heapBytes returns the live heap after a collection.
func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTraceWorkloadHoldsNoRows: a trace:PATH workload checks its file and
// counts its rows without holding them (a 200,000-row trace held ~20 MB
// of requests, ~100 bytes a row, so a 100M-row trace needed ~10 GB); its
// source reads the rows as it replays them, the same requests ReadTrace
// returns.
func TestTraceWorkloadHoldsNoRows(t *testing.T) {
	const n = 200_000
	path := writeRows(t, n)
	before := heapBytes()
	w := mustWorkload(t, "trace:"+path)
	held := int64(heapBytes()) - int64(before)
	if w.Rows() != n || !w.HasArrivals() || w.Requests() != nil {
		t.Fatalf("rows %d, arrivals %v, %d requests held; want %d rows, arrivals, none held", w.Rows(), w.HasArrivals(), len(w.Requests()), n)
	}
	if held > 1<<20 {
		t.Errorf("the workload holds %d bytes after reading %d rows, want under 1 MiB", held, n)
	}
	runtime.KeepAlive(w)
	want, err := ReadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Arrivals{{Kind: ArrivalsReplay}, {Kind: ArrivalsReplay, RateRPS: 3}, {Kind: ArrivalsPoisson, RateRPS: 5}, {Kind: ArrivalsNone}} {
		src, err := NewSource(w, a, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for r, ok := src.Next(); ok; r, ok = src.Next() {
			if r.PromptTokens != want[i].PromptTokens || r.OutputTokens != want[i].OutputTokens || r.ID != i {
				t.Fatalf("%s: request %d is %+v, row %+v", a, i, r, want[i])
			}
			if a.Kind == ArrivalsReplay && a.RateRPS == 0 && r.ArrivalS != want[i].ArrivalS {
				t.Fatalf("replay: request %d arrives at %g, recorded %g", i, r.ArrivalS, want[i].ArrivalS)
			}
			i++
		}
		if i != n || src.Err() != nil {
			t.Fatalf("%s: %d requests, %v; want %d", a, i, src.Err(), n)
		}
	}
}

// TestTraceReplayMatchesHeldRows: a trace file replayed (all rows or the
// first ones, rescaled or not) gives the requests of the same trace held
// in memory (the built-in splitwise-conv is that file, embedded).
func TestTraceReplayMatchesHeldRows(t *testing.T) {
	held := mustWorkload(t, "splitwise-conv")
	file := mustWorkload(t, "trace:"+tracePath(t, "splitwise_conv.csv"))
	for _, tc := range []struct {
		a Arrivals
		n int
	}{{Arrivals{Kind: ArrivalsReplay}, 0}, {Arrivals{Kind: ArrivalsReplay, RateRPS: 20}, 0}, {Arrivals{Kind: ArrivalsReplay, RateRPS: 20}, 700}, {Arrivals{Kind: ArrivalsReplay}, 1}} {
		want, err := Generate(held, tc.a, tc.n, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Generate(file, tc.a, tc.n, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !requestsEqual(got, want) {
			t.Errorf("%s, %d requests: the streamed trace differs from the held one", tc.a, tc.n)
		}
	}
}

// TestTraceReaderLongLine: a row longer than the read buffer (hash ids of
// a 10M-token prompt) reads whole.
func TestTraceReaderLongLine(t *testing.T) {
	ids := make([]string, 20_000)
	for i := range ids {
		ids[i] = fmt.Sprint(1_000_000 + i)
	}
	text := "num_prefill_tokens,num_decode_tokens,hash_ids\n10240000,3," + strings.Join(ids, " ") + "\n7,2,1 2\n"
	if len(text) < 2*traceBufBytes {
		t.Fatalf("line of %d bytes is not longer than the buffer", len(text))
	}
	path := filepath.Join(t.TempDir(), "long.csv")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := OpenTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := tr.Next()
	if !ok || len(r.HashIDs) != len(ids) || r.HashIDs[len(ids)-1] != uint64(1_000_000+len(ids)-1) || r.PromptTokens != 10240000 {
		t.Fatalf("long row: %v, %d ids, prompt %d", ok, len(r.HashIDs), r.PromptTokens)
	}
	r, ok = tr.Next()
	if !ok || r.PromptTokens != 7 || len(r.HashIDs) != 2 || r.ID != 1 {
		t.Fatalf("row after the long one: %+v", r)
	}
	if _, ok := tr.Next(); ok || tr.Err() != nil {
		t.Fatalf("end: %v, %v", ok, tr.Err())
	}
}

// TestUnsortedTraceSaysHowToSort: arrivals that go back in time are
// refused with the file, line and column, the earlier line, and a command
// that sorts the file by that column (the trace is not reordered).
func TestUnsortedTraceSaysHowToSort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unsorted.csv")
	if err := os.WriteFile(path, []byte("num_prefill_tokens,arrived_at,num_decode_tokens\n5,0,1\n5,2.5,1\n\n5,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseWorkload("trace:" + path)
	for _, want := range []string{path + ":5:2: arrived_at 1 is before the previous request's 2.5 (line 3)", "sort -t, -k2,2g"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

// TestTraceChangedDuringReplay: a trace file cut short after its source
// opened it ends the source with an error naming the rows read, not a
// silently shorter run.
func TestTraceChangedDuringReplay(t *testing.T) {
	path := writeRows(t, 50_000)
	w := mustWorkload(t, "trace:"+path)
	src, err := NewSource(w, Arrivals{Kind: ArrivalsReplay}, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 100_000); err != nil { // ~ 6,000 rows, the last one cut
		t.Fatal(err)
	}
	n := 0
	for _, ok := src.Next(); ok; _, ok = src.Next() {
		n++
	}
	if n >= 50_000 || src.Err() == nil {
		t.Fatalf("%d requests, error %v; want fewer than 50,000 and an error", n, src.Err())
	}
}

// BenchmarkTraceReader streams the largest real trace with arrival times
// row by row, holding none (BenchmarkReadTrace holds them all).
func BenchmarkTraceReader(b *testing.B) {
	path := tracePath(b, "splitwise_conv.csv")
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		tr, err := OpenTrace(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, ok := tr.Next(); ok; _, ok = tr.Next() {
			n++
		}
		if n != 19366 || tr.Err() != nil {
			b.Fatalf("%d requests, %v", n, tr.Err())
		}
	}
}

// TestWriteGeneratedHoldsOneRequest: 'datasets make' writes a generated
// trace holding one request at a time (10M rows took 991 MB): the same
// bytes as writing Generate's requests, for generated, sampled, replayed
// and shared-prefix workloads, and 200,000 rows allocate under 2 MB in all
// (Generate's slice alone is ~20 MB).
func TestWriteGeneratedHoldsOneRequest(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range []struct {
		w string
		a Arrivals
		n int
	}{
		{"fixed:64x8", Arrivals{Kind: ArrivalsPoisson, RateRPS: 4}, 500},
		{"splitwise-conv", Arrivals{Kind: ArrivalsReplay, RateRPS: 2}, 0},
		{"arxiv-summarization", Arrivals{Kind: ArrivalsNone}, 300},
		{"shared-prefix:groups=4,users=8,system=500,question=50,output=40", Arrivals{Kind: ArrivalsGamma, RateRPS: 3, CV: 2}, 400},
		{"trace:" + tracePath(t, "splitwise_code.csv"), Arrivals{Kind: ArrivalsPoisson, RateRPS: 1}, 100},
	} {
		w := mustWorkload(t, tc.w)
		reqs, err := Generate(w, tc.a, tc.n, 3)
		if err != nil {
			t.Fatal(err)
		}
		held, streamed := filepath.Join(dir, fmt.Sprint(i, "held.csv")), filepath.Join(dir, fmt.Sprint(i, "streamed.csv"))
		info := TraceInfo{TokensEstimated: i == 2}
		if err := WriteTraceInfo(held, reqs, info); err != nil {
			t.Fatal(err)
		}
		n, err := WriteGenerated(streamed, w, tc.a, tc.n, 3, info)
		if err != nil || n != len(reqs) {
			t.Fatalf("%s: %d requests, %v; want %d", tc.w, n, err, len(reqs))
		}
		a, _ := os.ReadFile(held)
		b, _ := os.ReadFile(streamed)
		if string(a) != string(b) {
			t.Errorf("%s %s: the streamed trace differs from the held one", tc.w, tc.a)
		}
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	n, err := WriteGenerated(filepath.Join(dir, "big.csv"), mustWorkload(t, "fixed:64x8"), Arrivals{Kind: ArrivalsPoisson, RateRPS: 4}, 200_000, 1, TraceInfo{})
	runtime.ReadMemStats(&m1)
	if err != nil || n != 200_000 {
		t.Fatal(n, err)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 2<<20 {
		t.Errorf("writing 200,000 generated rows allocated %d bytes, want under 2 MiB", alloc)
	}
}
