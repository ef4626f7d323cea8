package spec

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The acceptance defaults of speculative decoding are one record per
// method and measurement, speculative/<name>.yaml, embedded in the binary:
// the per-position acceptance rates a public source measured for a drafter
// on a target model and dataset, with that source. A simulation without
// its own acceptance vector draws from the record LookupAcceptance picks.
//
//go:embed speculative/*.yaml
var acceptanceFiles embed.FS

// AcceptanceRecord is one measured (or published) acceptance profile.
type AcceptanceRecord struct {
	// Name is the file's name without .yaml.
	Name string `yaml:"name"`
	// Method is one of SpecMethods.
	Method string `yaml:"method"`
	// Dataset is what the acceptance was measured on (mt-bench, humaneval,
	// gsm8k, sharegpt, ... as the source names it).
	Dataset string `yaml:"dataset"`
	// TargetModel is the verified model, a catalog name or Hugging Face id.
	TargetModel string `yaml:"target_model"`
	// DraftModel is the drafter's Hugging Face id (the EAGLE head, the
	// draft model; "" for mtp heads built into the target and ngram).
	DraftModel string `yaml:"draft_model,omitempty"`
	// NumSpeculativeTokens is the K the source measured with; Acceptance
	// has at least that many positions.
	NumSpeculativeTokens int `yaml:"num_speculative_tokens"`
	// Acceptance is the per-position acceptance rate (Speculative.Acceptance).
	Acceptance []float64 `yaml:"acceptance"`
	// Temperature is the sampling temperature of the measurement (0:
	// greedy).
	Temperature float64 `yaml:"temperature"`
	// Source is the public source of the figures: document, table or
	// section, date, setup (GPU, engine and version, batch), and how the
	// vector was derived from what it reports.
	Source string `yaml:"source"`
	// Notes states any assumption made deriving the vector (a guess is
	// labelled as one).
	Notes string `yaml:"notes,omitempty"`
	// Default marks the record a simulation of this method and target
	// model draws from when it names no dataset (at most one per method
	// and target model).
	Default bool `yaml:"default,omitempty"`
}

// builtinAcceptance parses the embedded records once.
var builtinAcceptance = sync.OnceValues(func() ([]AcceptanceRecord, error) {
	return readAcceptanceRecords(acceptanceFiles, "speculative")
})

// AcceptanceRecords returns the built-in acceptance records, by name.
func AcceptanceRecords() ([]AcceptanceRecord, error) { return builtinAcceptance() }

// readAcceptanceRecords reads every *.yaml record of folder dir of fsys,
// sorted by name.
func readAcceptanceRecords(fsys fs.FS, dir string) ([]AcceptanceRecord, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var recs []AcceptanceRecord
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		r, err := parseAcceptanceRecord(data)
		if err != nil {
			return nil, fmt.Errorf("acceptance record %s: %w", f, err)
		}
		if want := strings.TrimSuffix(path.Base(f), ".yaml"); r.Name != want {
			return nil, fmt.Errorf("acceptance record %s: name %q, want the file's name %q", f, r.Name, want)
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b AcceptanceRecord) int { return strings.Compare(a.Name, b.Name) })
	defaults := map[string]string{}
	for _, r := range recs {
		if !r.Default {
			continue
		}
		target, _ := CanonicalModelName(r.TargetModel)
		key := r.Method + " on " + target
		if other, ok := defaults[key]; ok {
			return nil, fmt.Errorf("acceptance records %s and %s are both the default of %s: mark one", other, r.Name, key)
		}
		defaults[key] = r.Name
	}
	return recs, nil
}

// parseAcceptanceRecord decodes one record strictly (an unknown key is an
// error) and checks it.
func parseAcceptanceRecord(data []byte) (AcceptanceRecord, error) {
	var r AcceptanceRecord
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil && !errors.Is(err, io.EOF) {
		return r, err
	}
	m, err := NormalizeSpecMethod(r.Method)
	switch {
	case err != nil:
		return r, err
	case m != r.Method:
		return r, fmt.Errorf("method %q: write vLLM's resolved name %q", r.Method, m)
	case r.Name == "" || r.Name != strings.ToLower(r.Name):
		return r, fmt.Errorf("name %q: want a lower-case name", r.Name)
	case r.Dataset == "" || r.Dataset != strings.ToLower(r.Dataset):
		return r, fmt.Errorf("dataset %q: want a lower-case dataset name", r.Dataset)
	case r.TargetModel == "":
		return r, errors.New("no target_model")
	case r.NumSpeculativeTokens <= 0:
		return r, fmt.Errorf("num_speculative_tokens %d: want the K the source measured with", r.NumSpeculativeTokens)
	case len(strings.TrimSpace(r.Source)) < 20:
		return r, fmt.Errorf("source %q: name the public source (document, table, date, setup)", r.Source)
	case r.Temperature < 0:
		return r, fmt.Errorf("temperature %g: want >= 0", r.Temperature)
	}
	return r, CheckAcceptance(r.Acceptance, r.NumSpeculativeTokens)
}

// LookupAcceptance picks the acceptance record for a method, a dataset
// ("": any) and the simulated model: among the records of the method (and
// dataset), those whose target is the model (else all of them); of these
// the ones with at least k positions (when any has); of these the one
// marked default, else the first by name. It fails, listing what exists,
// when none has the method (and dataset) or the record has fewer
// positions than k.
func LookupAcceptance(method, dataset, model string, k int) (AcceptanceRecord, error) {
	recs, err := AcceptanceRecords()
	if err != nil {
		return AcceptanceRecord{}, err
	}
	return pickAcceptance(recs, method, dataset, model, k)
}

func pickAcceptance(recs []AcceptanceRecord, method, dataset, model string, k int) (AcceptanceRecord, error) {
	var cands []AcceptanceRecord
	var have []string
	for _, r := range recs {
		have = append(have, r.Name+" ("+r.Method+", "+r.Dataset+")")
		if r.Method == method && (dataset == "" || r.Dataset == strings.ToLower(dataset)) {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		what := method
		if dataset != "" {
			what += " on dataset " + dataset
		}
		return AcceptanceRecord{}, fmt.Errorf("no acceptance record for %s (records: %s): give the per-position acceptance rates (--speculative-acceptance 0.8,0.6,0.45)", what, strings.Join(have, "; "))
	}
	want, _ := CanonicalModelName(model)
	if same := slices.DeleteFunc(slices.Clone(cands), func(r AcceptanceRecord) bool {
		t, _ := CanonicalModelName(r.TargetModel)
		return t != want
	}); len(same) > 0 {
		cands = same
	}
	if long := slices.DeleteFunc(slices.Clone(cands), func(r AcceptanceRecord) bool { return len(r.Acceptance) < k }); len(long) > 0 {
		cands = long
	}
	pick := cands[0]
	if i := slices.IndexFunc(cands, func(r AcceptanceRecord) bool { return r.Default }); i >= 0 {
		pick = cands[i]
	}
	if len(pick.Acceptance) < k {
		return pick, fmt.Errorf("acceptance record %s gives %d draft positions (measured at K=%d); num_speculative_tokens %d needs %d: give the per-position acceptance rates (--speculative-acceptance)", pick.Name, len(pick.Acceptance), pick.NumSpeculativeTokens, k, k)
	}
	return pick, nil
}
