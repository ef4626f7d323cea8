package datasets

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestImportMooncake(t *testing.T) {
	reqs, err := ImportMooncake(filepath.Join("testdata", "mooncake_small.jsonl"), MooncakeHashBlockTokens)
	if err != nil {
		t.Fatal(err)
	}
	want := []spec.Request{
		{ID: 0, ArrivalS: 0, PromptTokens: 1200, OutputTokens: 10, HashIDs: []uint64{0, 1, 2}, HashBlockTokens: 512},
		{ID: 1, ArrivalS: 0.5, PromptTokens: 1100, OutputTokens: 20, HashIDs: []uint64{0, 1, 3}, HashBlockTokens: 512},
		{ID: 2, ArrivalS: 1.2, PromptTokens: 600, OutputTokens: 5, HashIDs: []uint64{4, 5}, HashBlockTokens: 512},
		{ID: 3, ArrivalS: 1.2, PromptTokens: 2000, OutputTokens: 100, HashIDs: []uint64{0, 1, 2, 6}, HashBlockTokens: 512},
		{ID: 4, ArrivalS: 3.075, PromptTokens: 90, OutputTokens: 7},
	}
	if !reflect.DeepEqual(reqs, want) {
		t.Fatalf("got %+v\nwant %+v", reqs, want)
	}
	// Export and import again: the same requests; and through the trace
	// CSV too.
	dir := t.TempDir()
	jl := filepath.Join(dir, "again.jsonl")
	if err := ExportMooncake(jl, reqs); err != nil {
		t.Fatal(err)
	}
	back, err := ImportMooncake(jl, MooncakeHashBlockTokens)
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("export/import: %v, %+v", err, back)
	}
	csvPath := filepath.Join(dir, "trace.csv")
	if err := WriteTrace(csvPath, reqs); err != nil {
		t.Fatal(err)
	}
	if back, err = ReadTrace(csvPath); err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("trace CSV round trip: %v, %+v", err, back)
	}
}

func TestImportMooncakeBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		line, col  int
		want       string
	}{
		{"no output length", `{"timestamp": 0, "input_length": 5}`, 1, 1, `want "input_length" and "output_length"`},
		{"zero input", `{"input_length": 0, "output_length": 5}`, 1, 1, "input_length 0 out of range"},
		{"decreasing", "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 5}\n{\"timestamp\": 3, \"input_length\": 5, \"output_length\": 5}", 2, 1, "timestamp 3 ms is before the previous request's 9 ms"},
		{"mixed timestamps", "{\"input_length\": 5, \"output_length\": 5}\n\n{\"timestamp\": 3, \"input_length\": 5, \"output_length\": 5}", 3, 1, "on some lines and not others"},
		{"negative hash id", "{\"input_length\": 5, \"output_length\": 5}\n{\"input_length\": 5, \"output_length\": 5, \"hash_ids\": [1, -2]}", 2, 59, "cannot use a JSON number -2 as uint64"},
		{"syntax", "{\"input_length\": 5, \"output_length\": 5}\n{\"input_length\": 5 \"output_length\": 5}", 2, 20, "invalid character"},
		{"empty", "\n\n", 0, 0, "no requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "bad.jsonl", tc.body)
			_, err := ImportMooncake(path, MooncakeHashBlockTokens)
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a *ParseError with %q", err, tc.want)
			}
			if pe.Line != tc.line || (tc.col > 0 && pe.Column != tc.col) {
				t.Errorf("error %q at %d:%d, want %d:%d", err, pe.Line, pe.Column, tc.line, tc.col)
			}
		})
	}
	odd := []spec.Request{{ArrivalS: math.NaN(), PromptTokens: 5, OutputTokens: 1, HashIDs: []uint64{1}, HashBlockTokens: 16}}
	if err := ExportMooncake(filepath.Join(t.TempDir(), "x.jsonl"), odd); err == nil || !strings.Contains(err.Error(), "16-token runs") {
		t.Errorf("exporting 16-token hash runs as Mooncake: error %v", err)
	}
}

// TestConvertMooncake: 'datasets import mooncake' reads the file line by
// line, twice (check, then write), holding one line, and writes the bytes
// WriteTrace writes for ImportMooncake's requests (1,000,000 lines with
// hash ids: 586 MB peak RSS held, 60 MB streamed); a decreasing timestamp
// says how to sort the file.
func TestConvertMooncake(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, `{"timestamp": %d.5, "input_length": %d, "output_length": %d, "hash_ids": [%d, %d]}`+"\n", 1_700_000_000_000+i*37, 1+i%900, 1+i%7, i%5, i)
	}
	for _, in := range []string{filepath.Join("testdata", "mooncake_small.jsonl"), writeTemp(t, "big.jsonl", b.String())} {
		reqs, err := ImportMooncake(in, 256)
		if err != nil {
			t.Fatal(err)
		}
		held, streamed := filepath.Join(dir, "held.csv"), filepath.Join(dir, "streamed.csv")
		if err := WriteTrace(held, reqs); err != nil {
			t.Fatal(err)
		}
		n, ids, err := ConvertMooncake(in, streamed, 256)
		want := 0
		for _, r := range reqs {
			want += len(r.HashIDs)
		}
		if err != nil || n != len(reqs) || ids != want {
			t.Fatalf("%s: %d requests, %d ids, %v; want %d, %d", in, n, ids, err, len(reqs), want)
		}
		x, _ := os.ReadFile(held)
		y, _ := os.ReadFile(streamed)
		if string(x) != string(y) {
			t.Errorf("%s: the streamed trace differs from the held one", in)
		}
	}
	bad := writeTemp(t, "dec.jsonl", "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 5}\n{\"timestamp\": 3, \"input_length\": 5, \"output_length\": 5}\n")
	out := filepath.Join(dir, "dec.csv")
	if _, _, err := ConvertMooncake(bad, out, 512); err == nil || !strings.Contains(err.Error(), bad+":2:1: timestamp 3 ms") || !strings.Contains(err.Error(), "jq -c -s 'sort_by(.timestamp)[]'") {
		t.Errorf("decreasing timestamps: error %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused conversion wrote its output")
	}
}
