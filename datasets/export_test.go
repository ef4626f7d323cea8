package datasets

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

type vllmLine struct {
	Prompt       string `json:"prompt"`
	OutputTokens int    `json:"output_tokens"`
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	return out
}

func TestExportVLLMBench(t *testing.T) {
	reqs, err := Generate(mustWorkload(t, "splitwise-code"), Arrivals{Kind: ArrivalsPoisson, RateRPS: 3}, 200, 4)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The fixture tokenizers have tiny vocabularies, so their prompts take
	// the slow top-up path: 25 requests suffice there.
	for _, tc := range []struct {
		name string
		tok  string
		n    int
	}{{"approximate", "", 200}, {"exact byte-level BPE", "tokenizer_bytelevel.json", 25}, {"exact Llama style", "tokenizer_llama.json", 25}} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := reqs[:tc.n]
			var tok *Tokenizer
			if tc.tok != "" {
				if tok, err = LoadTokenizer(filepath.Join("testdata", tc.tok)); err != nil {
					t.Fatal(err)
				}
			}
			m, err := NewPromptMaker(tok, 9)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
			if err := ExportVLLMBench(path, reqs, m); err != nil {
				t.Fatal(err)
			}
			lines := readJSONL[vllmLine](t, path)
			if len(lines) != len(reqs) {
				t.Fatalf("%d lines, want %d", len(lines), len(reqs))
			}
			heads := map[string]bool{}
			for i, l := range lines {
				if l.OutputTokens != reqs[i].OutputTokens {
					t.Fatalf("line %d: output_tokens %d, want %d", i+1, l.OutputTokens, reqs[i].OutputTokens)
				}
				n := len(strings.Fields(l.Prompt))
				if tok != nil {
					if n, err = tok.Count(l.Prompt); err != nil {
						t.Fatal(err)
					}
				}
				if n != reqs[i].PromptTokens {
					t.Fatalf("line %d: prompt has %d tokens, want %d", i+1, n, reqs[i].PromptTokens)
				}
				if len(l.Prompt) >= 40 {
					heads[l.Prompt[:40]] = true
				}
			}
			if len(heads) < len(lines)*9/10 {
				t.Errorf("only %d distinct 40-byte prompt heads in %d prompts: prompts share prefixes", len(heads), len(lines))
			}
			again := filepath.Join(dir, "again.jsonl")
			m2, _ := NewPromptMaker(tok, 9)
			if err := ExportVLLMBench(again, reqs, m2); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(path)
			b, _ := os.ReadFile(again)
			if !bytes.Equal(a, b) {
				t.Error("same seed gave different bytes")
			}
		})
	}
}

func TestExportMooncake(t *testing.T) {
	reqs := []spec.Request{
		{ArrivalS: 0, PromptTokens: 10, OutputTokens: 2},
		{ArrivalS: 1.2345, PromptTokens: 11, OutputTokens: 3},
	}
	path := filepath.Join(t.TempDir(), "m.jsonl")
	if err := ExportMooncake(path, reqs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `{"timestamp": 0, "input_length": 10, "output_length": 2}
{"timestamp": 1235, "input_length": 11, "output_length": 3}
`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	for i := range reqs {
		reqs[i].ArrivalS = math.NaN()
	}
	if err := ExportMooncake(path, reqs); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), `{"input_length": 10, "output_length": 2}`) {
		t.Errorf("without arrivals: %s", b)
	}
	if err := ExportMooncake(path, []spec.Request{{ArrivalS: 0, PromptTokens: 0, OutputTokens: 1}}); err == nil {
		t.Error("exported a request with zero prompt tokens")
	}
}
