package validate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture testdata/h100-tp1__conv__r1.json is a hand-made vLLM result
// with five requests: one failed, one with a single output token. Its
// per-request values (and the summary figures vLLM would print for them) are
// in the file; the same requests, with arrival times, are in the .csv beside it.

func TestReadVLLMBenchmark(t *testing.T) {
	r, err := ReadRun("testdata/h100-tp1__conv__r1.json", Measured)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != (RunID{"h100-tp1", "conv", 1}) || r.Model != "meta-llama/Llama-3.1-8B-Instruct" || r.MakespanS != 1.5 {
		t.Errorf("identity %v model %q makespan %v", r.ID, r.Model, r.MakespanS)
	}
	if len(r.Requests) != 5 || r.Completed() != 4 || r.PromptTokens() != 750 || r.Requests[3].Completed {
		t.Fatalf("requests %d completed %d prompt tokens %d, request 3 completed %v", len(r.Requests), r.Completed(), r.PromptTokens(), r.Requests[3].Completed)
	}
	// E2E = TTFT + sum(itls); TPOT = (E2E-TTFT)/(out-1).
	for i, w := range []struct{ ttft, e2e, tpot float64 }{{50, 83, 11}, {80, 120, 20}, {30, 30, math.NaN()}, {}, {40, 80, 10}} {
		q := r.Requests[i]
		if i == 3 {
			continue
		}
		if !near(q.TTFTMs, w.ttft) || !near(q.E2EMs, w.e2e) || !(near(q.TPOTMs, w.tpot) || math.IsNaN(w.tpot) && math.IsNaN(q.TPOTMs)) {
			t.Errorf("request %d: ttft %v e2e %v tpot %v, want %v %v %v", i, q.TTFTMs, q.E2EMs, q.TPOTMs, w.ttft, w.e2e, w.tpot)
		}
	}
	// The metrics agree with the figures vLLM itself saved in the file.
	for name, want := range map[string]float64{
		"ttft_p50_ms": 45, "ttft_mean_ms": 50, "ttft_p99_ms": 79.1, "tpot_p50_ms": 11, "tpot_mean_ms": 13.666666666666666,
		"request_per_s": 2.6666666666666665, "decode_tok_s": 8.666666666666666, "makespan_s": 1.5,
	} {
		ms, err := Metrics(name)
		if err != nil {
			t.Fatal(err)
		}
		var m Metric
		for _, x := range ms {
			if x.Name == name {
				m = x
			}
		}
		if got := m.Value(r); !near(got, want) {
			t.Errorf("%s = %v, want %v (the file's own figure)", name, got, want)
		}
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
}

func TestReadRequestsCSV(t *testing.T) {
	r, err := ReadRun("testdata/h100-tp1__conv__r1.csv", Measured)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ReadRun("testdata/h100-tp1__conv__r1.json", Measured)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != v.ID || len(r.Requests) != 5 || r.Completed() != 4 || !near(r.MakespanS, 1.08) {
		t.Fatalf("id %v requests %d completed %d makespan %v, want %v 5 4 1.08", r.ID, len(r.Requests), r.Completed(), r.MakespanS, v.ID)
	}
	for i := range r.Requests {
		a, b := r.Requests[i], v.Requests[i]
		same := func(x, y float64) bool { return near(x, y) || math.IsNaN(x) && math.IsNaN(y) }
		if a.Completed != b.Completed || a.PromptTokens != b.PromptTokens || a.OutputTokens != b.OutputTokens ||
			a.Completed && (!same(a.TTFTMs, b.TTFTMs) || !same(a.E2EMs, b.E2EMs) || !same(a.TPOTMs, b.TPOTMs)) {
			t.Errorf("request %d: csv %+v, json %+v", i, a, b)
		}
	}
	// Without a tpot_ms column TPOT follows spec's definition.
	dir := t.TempDir()
	p := filepath.Join(dir, "c__w.csv")
	os.WriteFile(p, []byte("arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,5,100,180\n"), 0o644)
	r, err = ReadRun(p, Simulated)
	if err != nil || r.Requests[0].TPOTMs != 20 || r.ID != (RunID{"c", "w", 0}) || r.Side != Simulated {
		t.Errorf("tpot from ttft/e2e: %v, %+v", err, r)
	}
}

func TestReaderErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fixture, err := os.ReadFile("testdata/h100-tp1__conv__r1.json")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name, old, new string) string {
		if !strings.Contains(string(fixture), old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return write(name, strings.Replace(string(fixture), old, new, 1))
	}
	header := "request_id,arrival_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms,status\n"
	for _, c := range []struct {
		path string
		want string
	}{
		{edit("c__w__r1.json", "0.080,\n", "NaN,\n"), "ttfts[1] is NaN"},
		{edit("c__w__r2.json", "[0.020, 0.020]", "[0.020, Infinity]"), "itls[1][1] is NaN, infinite"},
		{edit("c__w__r9.json", "[0.020, 0.020]", "[0.020, 0.020, 0.020, 0.020]"), "itls[1] has 4 gaps but output_lens[1] is 3 tokens (at most 2 gaps"},
		{edit("c__w__r3.json", `"duration": 1.5`, `"duration": NaN`), "duration is missing or NaN"},
		{edit("c__w__r4.json", "0.030,\n", ""), "input_lens has 5 entries but ttfts has 4"},
		{edit("c__w__r5.json", `"completed": 4`, `"completed": 5`), "completed is 5 but 4 requests have no error"},
		{edit("c__w__r6.json", `"repetition": "1"`, `"repetition": "first"`), `metadata repetition "first"`},
		{write("c__w__r7.json", `{"duration": 10, "completed": 3, "mean_ttft_ms": 12}`), "no per-request arrays"},
		{write("c__w__r8.json", `[1, 2`), "not a vLLM benchmark result JSON"},
		{write("a__b__r1.csv", ""), "empty file"},
		{write("a__b__r2.csv", "arrival_s,prompt_tokens,output_tokens,e2e_ms\n0,1,1,5\n"), "line 1: no ttft_ms column"},
		{write("a__b__r3.csv", header+"0,0,10,4,50,11,83,completed\n1,0.5,10,4,NaN,11,83,completed\n"), "line 3 column 5 (ttft_ms): NaN: want a finite"},
		{write("a__b__r4.csv", header+"0,0,10,4,50,,83,completed\n"), "line 2 column 6 (tpot_ms)"},
		{write("a__b__r5.csv", header+"0,0,10,four,50,11,83,completed\n"), `line 2 column 4 (output_tokens): "four" is not a non-negative integer`},
		{write("a__b__r6.csv", header+"0,0,10,4,50,11,83,done\n"), `line 2 column 8 (status): "done"`},
		{write("a__b__r7.csv", header+"0,0,10,4,50,11,40,completed\n"), "line 2 column 7 (e2e_ms): 40 is below ttft_ms 50"},
		{write("noname.csv", header+"0,0,10,4,50,11,83,completed\n"), "cannot tell its configuration and workload"},
		{write("a__b__r1.txt", "x"), "unknown run format"},
		{filepath.Join(dir, "missing__w.csv"), "no such file"},
	} {
		_, err := ReadRun(c.path, Measured)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.path)) {
			t.Errorf("%s: error %v, want one naming the file and containing %q", filepath.Base(c.path), err, c.want)
		}
	}
}

func TestCheckRejectsEmptyAndUndefined(t *testing.T) {
	good := handRun(Measured, "c", "w", 1, 10)
	for _, c := range []struct {
		name string
		edit func(*Run)
		want string
	}{
		{"empty", func(r *Run) { r.Requests = nil }, "empty run"},
		{"none completed", func(r *Run) {
			for i := range r.Requests {
				r.Requests[i].Completed = false
			}
		}, "none of its 4 requests completed"},
		{"NaN TTFT", func(r *Run) { r.Requests[2].TTFTMs = math.NaN() }, "request 2 (id 2): ttft_ms is NaN"},
		{"NaN TPOT", func(r *Run) { r.Requests[1].TPOTMs = math.NaN() }, "tpot_ms is NaN"},
		{"no makespan", func(r *Run) { r.MakespanS = math.NaN() }, "makespan NaN s"},
	} {
		r := *good
		r.Requests = append([]Request(nil), good.Requests...)
		c.edit(&r)
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// One-token outputs have no TPOT, and that is not an error.
	r := *good
	r.Requests = append([]Request(nil), good.Requests...)
	r.Requests[0].OutputTokens, r.Requests[0].TPOTMs = 1, math.NaN()
	if err := r.Check(); err != nil {
		t.Errorf("one-token output: %v", err)
	}
}

func TestJSONNonFiniteToNull(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity, 1.5], "text": "NaN and Infinity \" NaN", "c": -1}`
	want := `{"a": null, "b": [null, null, 1.5], "text": "NaN and Infinity \" NaN", "c": -1}`
	if got := string(jsonNonFiniteToNull([]byte(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestReadVLLMStartTimes(t *testing.T) {
	data, err := os.ReadFile("testdata/h100-tp1__conv__r1.json")
	if err != nil {
		t.Fatal(err)
	}
	// vllm bench serve --save-detailed also saves each request's start
	// (perf_counter seconds): arrivals are relative to the first.
	text := strings.Replace(string(data), `"ttfts": [`, `"start_times": [1000.5, 1000.75, 1001.0, 1001.25, 1001.5],
    "ttfts": [`, 1)
	p := filepath.Join(t.TempDir(), "c__w.json")
	os.WriteFile(p, []byte(text), 0o644)
	r, err := ReadRun(p, Measured)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0, 0.25, 0.5, 0.75, 1} {
		if got := r.Requests[i].ArrivalS; !near(got, want) {
			t.Errorf("request %d arrives at %v s, want %v", i, got, want)
		}
	}
	if r.MakespanS != 1.5 {
		t.Errorf("makespan %v, want the benchmark's duration 1.5", r.MakespanS)
	}
}
