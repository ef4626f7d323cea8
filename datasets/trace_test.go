package datasets

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// sharedDir is the shared fixtures folder seen from this package.
const sharedDir = "../testdata"

// tracePath returns a real trace of testdata/traces, failing the test when
// it is missing.
func tracePath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(sharedDir, "traces", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared trace missing: %v", err)
	}
	return p
}

// countDataLines counts the non-empty lines after the header, independently
// of ReadTrace.
func countDataLines(t *testing.T, path string) int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReadTraceRealTraces reads the real traces and compares every row with
// an independent parse by encoding/csv.
func TestReadTraceRealTraces(t *testing.T) {
	for _, tc := range []struct {
		file        string
		want        int
		hasArrivals bool
	}{
		{"splitwise_conv.csv", 19366, true},
		{"splitwise_code.csv", 8819, true},
		{"arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", 28257, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := tracePath(t, tc.file)
			if n := countDataLines(t, path); n != tc.want {
				t.Fatalf("independent line count %d, table says %d", n, tc.want)
			}
			reqs, err := ReadTrace(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) != tc.want {
				t.Fatalf("ReadTrace: %d requests, want %d", len(reqs), tc.want)
			}
			if HasArrivals(reqs) != tc.hasArrivals {
				t.Errorf("HasArrivals = %v, want %v", HasArrivals(reqs), tc.hasArrivals)
			}
			f, _ := os.Open(path)
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, name := range rows[0] {
				col[name] = i
			}
			for i, row := range rows[1:] {
				r := reqs[i]
				p, _ := strconv.Atoi(row[col["num_prefill_tokens"]])
				o, _ := strconv.Atoi(row[col["num_decode_tokens"]])
				if r.ID != i || r.PromptTokens != p || r.OutputTokens != o {
					t.Fatalf("row %d: got %+v, csv says prompt %d output %d", i, r, p, o)
				}
				if tc.hasArrivals {
					a, _ := strconv.ParseFloat(row[col["arrived_at"]], 64)
					if r.ArrivalS != a {
						t.Fatalf("row %d: arrival %v, csv says %v", i, r.ArrivalS, a)
					}
				} else if !math.IsNaN(r.ArrivalS) {
					t.Fatalf("row %d: arrival %v, want NaN", i, r.ArrivalS)
				}
			}
		})
	}
}

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadTraceBadInput checks that every bad input is refused with an
// error naming file, line and column.
func TestReadTraceBadInput(t *testing.T) {
	const h = "arrived_at,num_prefill_tokens,num_decode_tokens\n"
	for _, tc := range []struct {
		name, body string
		line, col  int
		want       string
	}{
		{"missing output column", "arrived_at,num_prefill_tokens\n0,10\n", 1, 0, "missing required column num_decode_tokens (header has: arrived_at,num_prefill_tokens)"},
		{"missing prompt column", "num_decode_tokens\n5\n", 1, 0, "missing required column num_prefill_tokens"},
		{"zero output", h + "0,10,5\n1,10,0\n", 3, 3, "num_decode_tokens must be >= 1, got 0"},
		{"zero prompt", h + "0,0,5\n", 2, 2, "num_prefill_tokens must be >= 1, got 0"},
		{"negative prompt", h + "0,-3,5\n", 2, 2, "num_prefill_tokens must be >= 1, got -3"},
		{"non-integer", h + "0,12.5,5\n", 2, 2, `num_prefill_tokens must be an integer, got "12.5"`},
		{"text count", h + "0,ten,5\n", 2, 2, `must be an integer, got "ten"`},
		{"empty count", h + "0,,5\n", 2, 2, "num_prefill_tokens is empty"},
		{"huge count", h + "0,99999999999,5\n", 2, 2, "too large"},
		{"negative arrival", h + "-1,10,5\n", 2, 1, "arrived_at must be >= 0, got -1"},
		{"NaN arrival", h + "0,10,5\nNaN,10,5\n", 3, 1, "arrived_at is NaN"},
		{"infinite arrival", h + "Inf,10,5\n", 2, 1, "must be finite"},
		{"text arrival", h + "soon,10,5\n", 2, 1, `must be a number of seconds, got "soon"`},
		{"empty arrival", h + ",10,5\n", 2, 1, "arrived_at is empty"},
		{"decreasing arrival", h + "0,1,1\n2.5,1,1\n\n2.0,1,1\n", 5, 1, "2 is before the previous request's 2.5 (line 3)"},
		{"too few fields", h + "0,10\n", 2, 0, "has 2 fields, the header has 3"},
		{"too many fields", h + "0,10,5,7\n", 2, 0, "has 4 fields, the header has 3"},
		{"unterminated quote", "num_prefill_tokens,num_decode_tokens,session_id\n1,1,\"abc\n", 2, 0, "unterminated quoted field"},
		{"duplicate column", "num_prefill_tokens,num_decode_tokens,num_prefill_tokens\n1,1,1\n", 1, 3, `duplicate column "num_prefill_tokens" (also column 1)`},
		{"empty file", "", 0, 0, "empty file"},
		{"header only", h, 1, 0, "no requests after the header"},
		{"prefix longer than prompt", "num_prefill_tokens,num_decode_tokens,prefix_hash,prefix_tokens\n10,1,sys,11\n", 2, 4, "prefix_tokens 11 is more than the 10 prompt tokens"},
		{"prefix tokens without a group", "num_prefill_tokens,num_decode_tokens,prefix_tokens\n10,1,4\n", 2, 3, "need a prefix_hash"},
		{"text turn", "num_prefill_tokens,num_decode_tokens,turn\n10,1,two\n", 2, 3, `turn must be an integer >= 1, got "two"`},
		{"bad hash id", "num_prefill_tokens,num_decode_tokens,hash_ids\n10,1,1 2 x\n", 2, 3, `hash_ids id 3: want an unsigned integer, got "x"`},
		{"zero hash block", "num_prefill_tokens,num_decode_tokens,hash_ids,hash_block_tokens\n10,1,1,0\n", 2, 4, "hash_block_tokens must be >= 1"},
		{"crlf zero output", "num_prefill_tokens,num_decode_tokens\r\n7,0\r\n", 2, 2, "num_decode_tokens must be >= 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "bad.csv", tc.body)
			_, err := ReadTrace(path)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Path != path || pe.Line != tc.line || pe.Column != tc.col {
				t.Errorf("position %s:%d:%d, want %s:%d:%d", pe.Path, pe.Line, pe.Column, path, tc.line, tc.col)
			}
			prefix := path
			if tc.line > 0 {
				prefix += ":" + strconv.Itoa(tc.line)
			}
			if tc.col > 0 {
				prefix += ":" + strconv.Itoa(tc.col)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix+": ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want prefix %q and %q", msg, prefix, tc.want)
			}
		})
	}
}

// TestReadTraceLayouts checks what ReadTrace accepts: CRLF, a byte order
// mark, blank lines, columns in any order, extra columns, quoted fields,
// zero-fraction integers.
func TestReadTraceLayouts(t *testing.T) {
	id := func(s string) uint64 { return ContentID([]byte(s)) }
	body := "\xef\xbb\xbfpd_ratio,num_decode_tokens,session_id,num_prefill_tokens,arrived_at,prefix_hash\r\n" +
		"0.5,10,\"conv,1\",20,0.25,abc\r\n" +
		"\r\n" +
		"1.5,3.0,\"say \"\"hi\"\"\",4,0.25,\r\n" +
		"2.5,7,plain,8,1e1,h2"
	reqs, err := ReadTrace(writeTemp(t, "ok.csv", body))
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.Request{
		{ID: 0, ArrivalS: 0.25, PromptTokens: 20, OutputTokens: 10, Session: id("conv,1"), PrefixGroup: id("abc")},
		{ID: 1, ArrivalS: 0.25, PromptTokens: 4, OutputTokens: 3, Session: id(`say "hi"`)},
		{ID: 2, ArrivalS: 10, PromptTokens: 8, OutputTokens: 7, Session: id("plain"), PrefixGroup: id("h2")},
	}
	if len(reqs) != len(want) {
		t.Fatalf("got %d requests, want %d", len(reqs), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(reqs[i], want[i]) {
			t.Errorf("request %d: got %+v, want %+v", i, reqs[i], want[i])
		}
	}
}

func requestsEqual(a, b []spec.Request) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if math.IsNaN(x.ArrivalS) && math.IsNaN(y.ArrivalS) {
			x.ArrivalS, y.ArrivalS = 0, 0
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// TestWriteTraceRoundTrip writes real and generated traces and reads them
// back to the same requests; writing twice gives identical bytes.
func TestWriteTraceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	conv, err := ReadTrace(tracePath(t, "splitwise_conv.csv"))
	if err != nil {
		t.Fatal(err)
	}
	arxiv, err := ReadTrace(tracePath(t, "arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ParseWorkload("fixed:10x20")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := Generate(w, Arrivals{Kind: ArrivalsGamma, RateRPS: 37, CV: 3}, 5000, 9)
	if err != nil {
		t.Fatal(err)
	}
	sessions := []spec.Request{
		{ID: 0, ArrivalS: math.NaN(), PromptTokens: 5, OutputTokens: 6, Session: 17, Turn: 2},
		{ID: 1, ArrivalS: math.NaN(), PromptTokens: 700, OutputTokens: 8, PrefixGroup: 1 << 63, PrefixTokens: 300, HashIDs: []uint64{4, 0, 18446744073709551615}, HashBlockTokens: 512},
		{ID: 2, ArrivalS: math.NaN(), PromptTokens: 7, OutputTokens: 8, HashIDs: []uint64{9}, HashBlockTokens: 16},
	}
	for _, tc := range []struct {
		name    string
		reqs    []spec.Request
		columns string
	}{
		{"splitwise_conv", conv, "arrived_at,num_prefill_tokens,num_decode_tokens"},
		{"arxiv", arxiv, "num_prefill_tokens,num_decode_tokens"},
		{"gamma", gen, "arrived_at,num_prefill_tokens,num_decode_tokens"},
		{"sessions", sessions, "num_prefill_tokens,num_decode_tokens,session_id,turn,prefix_hash,prefix_tokens,hash_ids,hash_block_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p1, p2 := filepath.Join(dir, tc.name+"1.csv"), filepath.Join(dir, tc.name+"2.csv")
			if err := WriteTrace(p1, tc.reqs); err != nil {
				t.Fatal(err)
			}
			back, err := ReadTrace(p1)
			if err != nil {
				t.Fatal(err)
			}
			if !requestsEqual(back, tc.reqs) {
				t.Fatal("read back differs from what was written")
			}
			if err := WriteTrace(p2, back); err != nil {
				t.Fatal(err)
			}
			b1, _ := os.ReadFile(p1)
			b2, _ := os.ReadFile(p2)
			if !bytes.Equal(b1, b2) {
				t.Error("writing the same requests twice gave different bytes")
			}
			if header, _, _ := strings.Cut(string(b1), "\n"); header != tc.columns {
				t.Errorf("header %q, want %q", header, tc.columns)
			}
		})
	}
}

func TestWriteTraceRefusesBadRequestsAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "keep.csv")
	os.WriteFile(existing, []byte("old"), 0o644)
	for _, tc := range []struct {
		name string
		reqs []spec.Request
		want string
	}{
		{"empty", nil, "no requests"},
		{"zero output", []spec.Request{{ArrivalS: 0, PromptTokens: 1, OutputTokens: 0}}, "output tokens 0"},
		{"mixed arrivals", []spec.Request{{ArrivalS: 0, PromptTokens: 1, OutputTokens: 1}, {ArrivalS: math.NaN(), PromptTokens: 1, OutputTokens: 1}}, "some requests have arrival times"},
		{"decreasing", []spec.Request{{ArrivalS: 2, PromptTokens: 1, OutputTokens: 1}, {ArrivalS: 1, PromptTokens: 1, OutputTokens: 1}}, "before the previous"},
		{"prefix longer than the prompt", []spec.Request{{ArrivalS: 0, PromptTokens: 1, OutputTokens: 1, PrefixGroup: 1, PrefixTokens: 2}}, "prefix tokens 2 out of range"},
		{"hash ids without a run length", []spec.Request{{ArrivalS: 0, PromptTokens: 1, OutputTokens: 1, HashIDs: []uint64{1}}}, "hash ids with 0 tokens"},
	} {
		err := WriteTrace(existing, tc.reqs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "old" {
		t.Errorf("a refused write changed the file: %q", b)
	}
	if err := WriteTrace(filepath.Join(dir, "no", "such", "dir.csv"), []spec.Request{{PromptTokens: 1, OutputTokens: 1}}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// BenchmarkReadTrace reads the largest real trace with arrival times.
func BenchmarkReadTrace(b *testing.B) {
	path := tracePath(b, "splitwise_conv.csv")
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		reqs, err := ReadTrace(path)
		if err != nil || len(reqs) != 19366 {
			b.Fatalf("%d requests, %v", len(reqs), err)
		}
	}
}
