package collect

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// tinyMoE is a small MoE architecture the CPU torch worker measures in
// seconds.
const tinyMoEConfig = `{"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
 "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
 "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "max_position_embeddings": 512,
 "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128}`

func tinyMoE(t testing.TB) *spec.Model {
	t.Helper()
	m, err := spec.ParseConfig("tiny-moe", []byte(tinyMoEConfig))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustModel(t testing.TB, name string) *spec.Model {
	t.Helper()
	m, err := spec.LookupModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustDevice(t testing.TB, name string) *spec.Device {
	t.Helper()
	d, err := spec.LookupDevice(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// defaultLimits are the engine limits ftk uses by default.
var defaultLimits = spec.EngineLimits{MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, MaxModelLen: 4096, BlockSize: spec.DefaultBlockSize}

// smallLimits keep test sweeps to a few hundred shapes.
var smallLimits = spec.EngineLimits{MaxNumBatchedTokens: 64, MaxNumSeqs: 4, MaxModelLen: 48, BlockSize: spec.DefaultBlockSize}

func planConfig(m *spec.Model, lim spec.EngineLimits, layouts []spec.Layout, fams ...spec.Family) PlanConfig {
	if len(fams) == 0 {
		fams = Families
	}
	return PlanConfig{Model: m, Layouts: layouts, Limits: lim, Families: fams,
		GatingContexts: []string{spec.GatingPrefillHot, spec.GatingStandalone},
		RoutingPaths:   []string{RoutingStandard}, Distributions: LoadDistributions}
}

// readCSV returns the header and rows of a file the sweep wrote.
func readCSV(t testing.TB, path string) ([]string, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s: empty", path)
	}
	return recs[0], recs[1:]
}

// column returns the values of column name.
func column(t testing.TB, header []string, rows [][]string, name string) []string {
	t.Helper()
	i := slices.Index(header, name)
	if i < 0 {
		t.Fatalf("no column %q in %v", name, header)
	}
	out := make([]string, len(rows))
	for j, r := range rows {
		out[j] = r[i]
	}
	return out
}

// csvFiles lists the CSV files under dir, relative, sorted.
func csvFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".csv" {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}
