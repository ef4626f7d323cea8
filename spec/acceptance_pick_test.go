package spec

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestPickAcceptance: which record a simulation draws from when it gives no
// acceptance vector of its own.
func TestPickAcceptance(t *testing.T) {
	rec := func(name, dataset, target string, def bool, acc ...float64) AcceptanceRecord {
		return AcceptanceRecord{Name: name, Method: SpecEagle, Dataset: dataset, TargetModel: target,
			NumSpeculativeTokens: len(acc), Acceptance: acc, Default: def}
	}
	recs := []AcceptanceRecord{
		rec("a-8b-cnn", "cnn-dailymail", "meta-llama/Llama-3.1-8B-Instruct", false, 0.6, 0.4, 0.2),
		rec("b-8b-sharegpt", "sharegpt", "meta-llama/Llama-3.1-8B-Instruct", true, 0.6, 0.3, 0.2),
		rec("c-8b-long", "gsm8k", "meta-llama/Llama-3.1-8B-Instruct", false, 0.7, 0.5, 0.3, 0.2, 0.1),
		rec("d-70b", "sharegpt", "meta-llama/Llama-3.3-70B-Instruct", false, 0.8, 0.6, 0.4, 0.3, 0.2, 0.1),
	}
	for _, c := range []struct {
		dataset, model string
		k              int
		want, err      string
	}{
		{"", "llama-3.1-8b", 3, "b-8b-sharegpt", ""},         // the model's default, not the first by name
		{"cnn-dailymail", "llama-3.1-8b", 3, "a-8b-cnn", ""}, // a named dataset wins over the default
		{"", "llama-3.1-8b", 5, "c-8b-long", ""},             // the default has too few positions for K=5
		{"", "llama-3.3-70b", 3, "d-70b", ""},
		{"", "qwen3-32b", 3, "b-8b-sharegpt", ""},                              // no record of the model: the method's default
		{"", "llama-3.1-8b", 6, "", "b-8b-sharegpt gives 3 draft positions"},   // none long enough: the default, refused
		{"humaneval", "llama-3.1-8b", 3, "", "no acceptance record for eagle"}, // no such dataset
	} {
		got, err := pickAcceptance(recs, SpecEagle, c.dataset, c.model, c.k)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q %s K=%d: error %v, want one containing %q", c.dataset, c.model, c.k, err, c.err)
			}
			continue
		}
		if err != nil || got.Name != c.want {
			t.Errorf("%q %s K=%d: picked %q (%v), want %q", c.dataset, c.model, c.k, got.Name, err, c.want)
		}
	}
}

// TestAcceptanceDefaultsUnique: two defaults for one method and target
// model are refused when the records are read.
func TestAcceptanceDefaultsUnique(t *testing.T) {
	body := func(name, dataset string) string {
		return "name: " + name + "\nmethod: ngram\ndataset: " + dataset + "\ntarget_model: meta-llama/Llama-3.1-8B-Instruct\n" +
			"num_speculative_tokens: 2\nacceptance: [0.3, 0.2]\nsource: \"a public source, its table, date and setup\"\ndefault: true\n"
	}
	fsys := fstest.MapFS{
		"speculative/x.yaml": {Data: []byte(body("x", "sharegpt"))},
		"speculative/y.yaml": {Data: []byte(body("y", "gsm8k"))},
	}
	if _, err := readAcceptanceRecords(fsys, "speculative"); err == nil || !strings.Contains(err.Error(), "both the default") {
		t.Fatalf("two defaults of ngram on llama-3.1-8b: error %v", err)
	}
	delete(fsys, "speculative/y.yaml")
	if recs, err := readAcceptanceRecords(fsys, "speculative"); err != nil || len(recs) != 1 || !recs[0].Default {
		t.Fatalf("one default: %v %v", recs, err)
	}
}
