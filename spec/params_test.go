package spec

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedDir is testdata beside the repository; tests that need it fail
// when it is missing.
const sharedDir = "../testdata"

func loadShared(t *testing.T, file string) *Model {
	t.Helper()
	path := filepath.Join(sharedDir, "models", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("shared model config missing (testdata/ at the repository root): %v", err)
	}
	m, err := ParseConfig(strings.TrimSuffix(file, ".json"), data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// within reports whether got matches a published figure to the figure's own
// precision: within 1%, or within half a unit of its last stated digit
// (publishers round: Phi-tiny-MoE's 3.75B is published as 3.8B).
func within(got, published, unit float64) bool {
	return math.Abs(got-published) <= math.Max(0.01*published, unit/2)
}

func TestParamsMatchPublishedTotals(t *testing.T) {
	// Published totals (and actives where the publisher states one), in
	// billions, with the unit of their last digit.
	cases := []struct {
		file          string
		total, active float64
		unit          float64
	}{
		{"qwen3-a3b-30b-moe.json", 30.5, 3.3, 0.1},         // Qwen3-30B-A3B model card
		{"Qwen3-235B-A22B.json", 235, 22, 1},               // Qwen3-235B-A22B model card
		{"deepseek-v3.json", 671, 37, 1},                   // DeepSeek-V3 report (671B + 14B MTP excluded)
		{"mixtral_8x7b_moe.json", 46.7, 12.9, 0.1},         // Mixtral of Experts paper
		{"llama3.1-8b.json", 8.03, 8.03, 0.01},             // Llama 3.1 model card
		{"llama3.3-70b.json", 70.6, 70.6, 0.1},             // Llama 3.3 model card
		{"llama2_7b_dense_example.json", 6.74, 6.74, 0.01}, // Llama 2 paper
		{"Phi-tiny-MoE-instruct.json", 3.8, 0, 0.1},        // Phi-tiny-MoE card (its 1.1B active excludes embeddings by an unstated rule)
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			m := loadShared(t, c.file)
			total, active := m.Params()
			tb, ab := float64(total)/1e9, float64(active)/1e9
			if !within(tb, c.total, c.unit) {
				t.Errorf("total %.3fB, published %gB", tb, c.total)
			}
			if c.active == 0 {
				return
			}
			// Actives are published truncated to their last digit (Qwen's
			// 3.353B is "3.3B"), so accept [published, published+unit).
			if ab < c.active-c.unit/2 || ab >= c.active+c.unit {
				t.Errorf("active %.3fB, published %gB", ab, c.active)
			}
		})
	}
}

func TestTinyQwenParamsByHand(t *testing.T) {
	m := loadShared(t, "Qwen3-30B-A3B-tiny.json")
	// 8 layers: attention 2048*(4096+512+512) + 4096*2048 = 18,874,368,
	// q/k norms 256, two layer norms 4096, router 2048*16 = 32,768,
	// 16 experts of 3*2048*768 = 4,718,592 each.
	layer := int64(18874368 + 256 + 4096 + 32768 + 16*4718592)
	emb := int64(2*151936*2048 + 2048)
	total, active := m.Params()
	if want := 8*layer + emb; total != want {
		t.Errorf("total = %d, want %d", total, want)
	}
	activeLayer := layer - 8*4718592
	if want := 8*activeLayer + emb; active != want {
		t.Errorf("active = %d, want %d", active, want)
	}
}

func TestCatalogMatchesSharedConfigs(t *testing.T) {
	for file, name := range map[string]string{
		"qwen3-a3b-30b-moe.json":       "qwen3-30b-a3b",
		"Qwen3-30B-A3B-tiny.json":      "qwen3-30b-a3b-tiny",
		"mixtral_8x7b_moe.json":        "mixtral-8x7b",
		"llama2_7b_dense_example.json": "llama-2-7b",
		"llama3.3-70b.json":            "llama-3.3-70b",
		"deepseek-v3.json":             "deepseek-v3",
		"Qwen3-235B-A22B.json":         "qwen3-235b-a22b",
		"Phi-tiny-MoE-instruct.json":   "phi-tiny-moe",
	} {
		fromFile := loadShared(t, file)
		fromCat, err := LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		ft, fa := fromFile.Params()
		ct, ca := fromCat.Params()
		if ft != ct || fa != ca {
			t.Errorf("%s: file gives %d/%d params, catalog %s gives %d/%d", file, ft, fa, name, ct, ca)
		}
		if fromFile.KVBytesPerTokenLayer(1) != fromCat.KVBytesPerTokenLayer(1) {
			t.Errorf("%s: KV bytes differ from catalog %s", file, name)
		}
	}
}

func TestKVBytesPerToken(t *testing.T) {
	cases := []struct {
		model string
		l     Layout
		want  int64
	}{
		// 48 layers x K and V x 4 KV heads x 128 x 2 bytes.
		{"qwen3-30b-a3b", Layout{TP: 1}, 48 * 2 * 4 * 128 * 2},
		// TP8 > 4 KV heads: each GPU keeps one (replicated) head.
		{"qwen3-30b-a3b", Layout{TP: 8, EP: 8}, 48 * 2 * 1 * 128 * 2},
		{"llama-3.1-8b", Layout{TP: 2}, 32 * 2 * 4 * 128 * 2},
		// PP2: 16 layers per stage.
		{"llama-2-7b", Layout{PP: 2}, 16 * 2 * 32 * 128 * 2},
		// MLA: compressed latent 512 + rope 64, not split by TP.
		{"deepseek-v3", Layout{TP: 8}, 61 * (512 + 64) * 2},
	}
	for _, c := range cases {
		m, err := LookupModel(c.model)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerToken(c.l); got != c.want {
			t.Errorf("%s %s: KV bytes per token %d, want %d", c.model, c.l, got, c.want)
		}
	}
}

func TestWeightBytesPerGPU(t *testing.T) {
	m, _ := LookupModel("llama-3.1-8b")
	total, _ := m.Params()
	one := m.WeightBytesPerGPU(Layout{})
	if d := math.Abs(float64(one-2*total)) / float64(2*total); d > 0.001 {
		t.Errorf("TP1 weights %d bytes, want about 2 x %d params", one, total)
	}
	two := m.WeightBytesPerGPU(Layout{TP: 2})
	if r := float64(one) / float64(two); r < 1.9 || r > 2.05 {
		t.Errorf("TP2 should about halve the weights: ratio %.3f", r)
	}
	moe, _ := LookupModel("qwen3-30b-a3b")
	ep1 := moe.WeightBytesPerGPU(Layout{TP: 8})
	ep8 := moe.WeightBytesPerGPU(Layout{TP: 8, EP: 8})
	if ep1 != ep8 {
		// EP8 over TP8 ranks holds 16 whole experts; TP8 holds 128 experts
		// split 8 ways: the same bytes.
		t.Errorf("TP8 and TP8/EP8 should hold the same expert bytes: %d vs %d", ep1, ep8)
	}
}
