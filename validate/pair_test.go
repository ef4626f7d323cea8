package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSameModel(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", true},
		{"/root/models/meta-llama/Llama-3.1-8B-Instruct/", "llama3.1-8b", true},
		{"Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b", true},
		{"testdata/models/qwen3-a3b-30b-moe.json", "Qwen/Qwen3-30B-A3B", true},
		{"meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-8b", false},
		{"mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b", true},   // the catalog model's Hugging Face id
		{"mistralai/Mixtral-8x22B-v0.1", "mixtral-8x7b", false}, // another model of the family
		{"my-org/custom-model", "custom_model", true},
	} {
		if got := SameModel(c.a, c.b); got != c.same {
			t.Errorf("SameModel(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

func TestPairRunsRefusesIncomparable(t *testing.T) {
	base := func() (*Run, *Run) {
		return handRun(Measured, "c", "w", 1, 10), handRun(Simulated, "c", "w", 1, 10)
	}
	for _, c := range []struct {
		name string
		edit func(m, s *Run) []*Run
		want string
	}{
		{"other model", func(m, s *Run) []*Run {
			m.Model, s.Model = "meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-8b"
			return []*Run{m, s}
		}, `model "meta-llama/Llama-3.3-70B-Instruct", but the simulation simulated-c/w/r1 ran "llama-3.1-8b"`},
		{"request count", func(m, s *Run) []*Run {
			s.Requests = s.Requests[:3]
			return []*Run{m, s}
		}, "4 requests, but the simulation simulated-c/w/r1 of c/w/r1 has 3"},
		{"prompts", func(m, s *Run) []*Run {
			s.Requests[0].PromptTokens = 300
			return []*Run{m, s}
		}, "400 prompt tokens in all, but the simulation simulated-c/w/r1 has 600"},
		{"output lengths 2x", func(m, s *Run) []*Run {
			for i := range s.Requests {
				s.Requests[i].OutputTokens = 22
			}
			return []*Run{m, s}
		}, "11.0 output tokens per completed request, but the simulation simulated-c/w/r1 has 22.0 (2.00x, +100.0%)"},
		{"duplicate", func(m, s *Run) []*Run {
			d := *m
			d.Source = "again.json"
			return []*Run{m, s, &d}
		}, "two measured runs are both c/w/r1: measured-c/w/r1 and again.json"},
	} {
		m, s := base()
		if _, _, err := PairRuns(c.edit(m, s)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	m, s := base()
	m.Model, s.Model = "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"
	if pairs, unpaired, err := PairRuns([]*Run{m, s}); err != nil || len(pairs) != 1 || len(unpaired) != 0 {
		t.Errorf("same model, other spelling: %v %d pairs %d unpaired", err, len(pairs), len(unpaired))
	}
}

func TestPairRunsByRepetition(t *testing.T) {
	runs := []*Run{
		handRun(Measured, "c", "w", 1, 1), handRun(Measured, "c", "w", 2, 1), handRun(Measured, "c", "w", 4, 1),
		handRun(Simulated, "c", "w", 2, 1), handRun(Simulated, "c", "w", 1, 1), handRun(Simulated, "c", "w", 3, 1),
		handRun(Simulated, "c", "x", 0, 1),
	}
	pairs, unpaired, err := PairRuns(runs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pairs {
		got = append(got, p.Measured.ID.String()+"="+p.Simulated.ID.String())
	}
	if strings.Join(got, " ") != "c/w/r1=c/w/r1 c/w/r2=c/w/r2" {
		t.Errorf("pairs %v", got)
	}
	var left []string
	for _, u := range unpaired {
		left = append(left, u.Run.Side.String()+" "+u.Run.ID.String())
	}
	if strings.Join(left, ", ") != "measured c/w/r4, simulated c/w/r3, simulated c/x" {
		t.Errorf("unpaired %v", left)
	}
	if _, err := Compare(runs[6:], nil); err == nil || !strings.Contains(err.Error(), "no measured run has a simulated partner") {
		t.Errorf("nothing paired: %v", err)
	}
}

func TestIdentityFromNameAndManifest(t *testing.T) {
	for _, c := range []struct {
		path string
		id   RunID
		ok   bool
	}{
		{"x/h100-tp1__conv__r2.json", RunID{"h100-tp1", "conv", 2}, true},
		{"x/h100-tp1__conv/", RunID{"h100-tp1", "conv", 0}, true},
		{"a.b__c.d.csv", RunID{"a.b", "c.d", 0}, true},
		{"sim/h100__rate-2.5", RunID{"h100", "rate-2.5", 0}, true}, // directories keep their dots
		{"h100__conv__2.json", RunID{}, false},
		{"h100__conv__r0.json", RunID{}, false},
		{"h100_conv.json", RunID{}, false},
		{"a__b__r1__d.json", RunID{}, false},
	} {
		id, ok := idFromName(c.path)
		if id != c.id || ok != c.ok {
			t.Errorf("idFromName(%q) = %v, %v; want %v, %v", c.path, id, ok, c.id, c.ok)
		}
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, "runs.yaml")
	fixture, _ := filepath.Abs("testdata/h100-tp1__conv__r1.csv")
	os.WriteFile(manifest, []byte(`runs:
  - {path: `+fixture+`, side: measured, config: a100, workload: code, repetition: 3, model: llama-3.1-8b}
  - {path: `+fixture+`, side: simulated, config: a100, workload: code}
`), 0o644)
	runs, err := ReadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != (RunID{"a100", "code", 3}) || runs[0].Model != "llama-3.1-8b" || runs[1].Side != Simulated || runs[1].ID.Repetition != 0 {
		t.Errorf("manifest runs: %+v %+v", runs[0], runs[1])
	}
	for body, want := range map[string]string{
		"runs:\n  - {path: x.csv, side: real, config: a, workload: b}\n":                `run 1: side "real"`,
		"runs:\n  - {path: x.csv, side: measured, workload: b}\n":                       "run 1: path, config and workload are required",
		"runs:\n  - {path: x.csv, side: measured, config: a, workload: b, repeat: 1}\n": "field repeat not found",
		"runs: []\n": "no runs",
		"runs:\n  - {path: nope.csv, side: measured, config: a, workload: b}\n": "nope.csv: no such file",
	} {
		os.WriteFile(manifest, []byte(body), 0o644)
		if _, err := ReadManifest(manifest); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("manifest %q: %v, want %q", body, err, want)
		}
	}
}

func TestReadRunsDirectory(t *testing.T) {
	runs, err := ReadRuns([]string{"testdata"}, Measured)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 2 {
		t.Fatalf("%d runs from testdata, want the .csv and the .json", len(runs))
	}
	if _, err := ReadRuns([]string{t.TempDir()}, Measured); err == nil || !strings.Contains(err.Error(), "no runs in this directory") {
		t.Errorf("empty directory: %v", err)
	}
}
