package spec

import (
	"math"
	"strings"
	"testing"
	"testing/fstest"
)

// Every built-in acceptance record parses, is complete and sourced, and
// the record of DeepSeek-V3's MTP is picked for that model.
func TestAcceptanceRecords(t *testing.T) {
	recs, err := AcceptanceRecords()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no acceptance records")
	}
	for _, r := range recs {
		if r.Source == "" || len(r.Acceptance) < r.NumSpeculativeTokens {
			t.Errorf("%s: incomplete: %+v", r.Name, r)
		}
	}
	r, err := LookupAcceptance(SpecMTP, "", "deepseek-v3", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "mtp-deepseek-v3-report" || r.Acceptance[0] != 0.875 {
		t.Errorf("picked %s %v, want mtp-deepseek-v3-report [0.875]", r.Name, r.Acceptance)
	}
	if _, err := LookupAcceptance(SpecMTP, "", "deepseek-v3", 40); err == nil || !strings.Contains(err.Error(), "--speculative-acceptance") {
		t.Errorf("K beyond the record's positions: err %v, want one naming --speculative-acceptance", err)
	}
	if _, err := LookupAcceptance(SpecMTP, "no-such-dataset", "deepseek-v3", 1); err == nil || !strings.Contains(err.Error(), "records:") {
		t.Errorf("unknown dataset: err %v, want the list of records", err)
	}
}

// A record that lacks a source, has a rising acceptance vector, an alias
// method name, an unknown key or a name unlike its file is refused.
func TestAcceptanceRecordRefused(t *testing.T) {
	good := "name: r\nmethod: eagle3\ndataset: mt-bench\ntarget_model: llama-3.1-8b\nnum_speculative_tokens: 2\nacceptance: [0.8, 0.6]\nsource: \"EAGLE-3 paper (arXiv:2503.01840), table 1, H100\"\n"
	for _, tc := range []struct{ name, data, want string }{
		{"good", good, ""},
		{"no source", strings.Replace(good, "source: \"EAGLE-3 paper (arXiv:2503.01840), table 1, H100\"", "source: x", 1), "source"},
		{"rising", strings.Replace(good, "[0.8, 0.6]", "[0.6, 0.8]", 1), "never increase"},
		{"short", strings.Replace(good, "[0.8, 0.6]", "[0.8]", 1), "positions"},
		{"alias", strings.Replace(good, "eagle3", "deepseek_mtp", 1), "resolved name"},
		{"unknown key", good + "speedup: 2\n", "speedup"},
		{"file name", strings.Replace(good, "name: r", "name: other", 1), "file's name"},
		{"rate above 1", strings.Replace(good, "[0.8, 0.6]", "[1.2, 0.6]", 1), "[0, 1]"},
	} {
		fsys := fstest.MapFS{"d/r.yaml": {Data: []byte(tc.data)}}
		_, err := readAcceptanceRecords(fsys, "d")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// vLLM's --speculative-config JSON parses with vLLM's keys; MTP aliases
// resolve to mtp; unknown keys and bad values are errors.
func TestParseSpeculativeConfig(t *testing.T) {
	s, err := ParseSpeculativeConfig(`{"method": "deepseek_mtp", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Method != SpecMTP || s.NumSpeculativeTokens != 2 || s.LookaheadTokens() != 2 {
		t.Errorf("got %+v (lookahead %d), want mtp K=2 lookahead 2", s, s.LookaheadTokens())
	}
	s, err = ParseSpeculativeConfig(`{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 5, "prompt_lookup_min": 2}`)
	if err != nil || s.Validate() != nil || s.LookaheadTokens() != 0 || s.UsesDraftPasses() {
		t.Errorf("ngram: %+v, %v: want valid, no lookahead slots, no draft passes", s, err)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"method": "eagle", "num_speculative_tokens": 3, "bogus": 1}`, "unknown key"},
		{`{"model": "x", "num_speculative_tokens": 3}`, "no method"},
		{`{"method": "medusa", "num_speculative_tokens": 3}`, "speculative method"},
		{`{"method": "eagle", "num_speculative_tokens": -1}`, "negative"},
		{`{"method": "draft_model", "num_speculative_tokens": 3}`, "draft model"},
		{`{"method": "eagle", "num_speculative_tokens": 2, "acceptance": [0.9]}`, "positions"},
		{`[1]`, "JSON object"},
	} {
		s, err := ParseSpeculativeConfig(tc.json)
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one containing %q", tc.json, err, tc.want)
		}
	}
}

// The conditional acceptance of each position, multiplied out, gives back
// the per-position rates; the mean acceptance length is 1 + their sum.
func TestConditionalAcceptance(t *testing.T) {
	a := []float64{0.8, 0.6, 0.3, 0}
	c := ConditionalAcceptance(a, 4)
	p := 1.0
	for i := range a {
		p *= c[i]
		if math.Abs(p-a[i]) > 1e-12 {
			t.Errorf("position %d: product %g, want %g", i+1, p, a[i])
		}
	}
	if l := MeanAcceptanceLength(a, 3); math.Abs(l-2.7) > 1e-12 {
		t.Errorf("mean acceptance length %g, want 2.7", l)
	}
}
