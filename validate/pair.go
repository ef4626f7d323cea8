package validate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Pair is a measured run and the simulated run of the same configuration,
// workload and repetition.
type Pair struct {
	Measured  *Run
	Simulated *Run
}

// Unpaired is a run that has no partner on the other side.
type Unpaired struct {
	Run    *Run
	Reason string
}

// PromptTokenTolerance is the largest relative difference in total prompt
// tokens accepted between the two runs of a pair: more means the runs did not
// replay the same requests.
const PromptTokenTolerance = 0.01

// OutputTokenTolerance is the largest relative difference in mean output
// tokens per completed request accepted between the two runs of a pair. A
// guess at what separates tokenizer round-off from a run that generated
// other lengths (without --ignore-eos, or another workload): the same 1%
// as prompts.
const OutputTokenTolerance = 0.01

// PairRuns pairs measured and simulated runs by configuration, workload and
// repetition. Within one configuration and workload, a side holding a single
// unnumbered run pairs it with every run of the other side; otherwise runs
// pair by repetition number. Runs left without a partner are returned as
// Unpaired. It fails on duplicate identities and on pairs that cannot be
// compared: different models, different request counts, different prompts.
func PairRuns(runs []*Run) ([]Pair, []Unpaired, error) {
	type group struct{ sides [2][]*Run }
	groups := map[[2]string]*group{}
	seen := map[string]*Run{}
	for _, r := range runs {
		key := r.Side.String() + " " + r.ID.String()
		if prev, ok := seen[key]; ok {
			return nil, nil, fmt.Errorf("two %s runs are both %s: %s and %s (give them different repetitions)", r.Side, r.ID, prev.Source, r.Source)
		}
		seen[key] = r
		k := [2]string{r.ID.Config, r.ID.Workload}
		if groups[k] == nil {
			groups[k] = &group{}
		}
		groups[k].sides[r.Side] = append(groups[k].sides[r.Side], r)
	}
	keys := make([][2]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	var pairs []Pair
	var unpaired []Unpaired
	for _, k := range keys {
		meas, sim := groups[k].sides[Measured], groups[k].sides[Simulated]
		sortRuns(meas)
		sortRuns(sim)
		switch {
		case len(meas) == 0 || len(sim) == 0:
			other := "simulated"
			if len(meas) == 0 {
				other = "measured"
			}
			for _, r := range append(meas, sim...) {
				unpaired = append(unpaired, Unpaired{r, fmt.Sprintf("no %s run of %s/%s", other, k[0], k[1])})
			}
		case len(sim) == 1 && sim[0].ID.Repetition == 0:
			for _, m := range meas {
				pairs = append(pairs, Pair{m, sim[0]})
			}
		case len(meas) == 1 && meas[0].ID.Repetition == 0:
			for _, s := range sim {
				pairs = append(pairs, Pair{meas[0], s})
			}
		default:
			byRep := map[int]*Run{}
			for _, s := range sim {
				byRep[s.ID.Repetition] = s
			}
			used := map[int]bool{}
			for _, m := range meas {
				if s, ok := byRep[m.ID.Repetition]; ok {
					pairs = append(pairs, Pair{m, s})
					used[m.ID.Repetition] = true
				} else {
					unpaired = append(unpaired, Unpaired{m, fmt.Sprintf("no simulated run of %s/%s with repetition %d", k[0], k[1], m.ID.Repetition)})
				}
			}
			for _, s := range sim {
				if !used[s.ID.Repetition] {
					unpaired = append(unpaired, Unpaired{s, fmt.Sprintf("no measured run of %s/%s with repetition %d", k[0], k[1], s.ID.Repetition)})
				}
			}
		}
	}
	for _, p := range pairs {
		if err := checkPair(p); err != nil {
			return nil, nil, err
		}
	}
	return pairs, unpaired, nil
}

func sortRuns(rs []*Run) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].ID.Repetition < rs[j].ID.Repetition })
}

// checkPair refuses a pair whose runs did not serve the same model on the
// same requests.
func checkPair(p Pair) error {
	m, s := p.Measured, p.Simulated
	if m.Model != "" && s.Model != "" && !SameModel(m.Model, s.Model) {
		return fmt.Errorf("%s: model %q, but the simulation %s ran %q", m.Source, m.Model, s.Source, s.Model)
	}
	if len(m.Requests) != len(s.Requests) {
		return fmt.Errorf("%s: %d requests, but the simulation %s of %s has %d: they did not replay the same trace", m.Source, len(m.Requests), s.Source, m.ID, len(s.Requests))
	}
	mp, sp := m.PromptTokens(), s.PromptTokens()
	if math.Abs(float64(mp-sp)) > PromptTokenTolerance*float64(max(mp, sp)) {
		return fmt.Errorf("%s: %d prompt tokens in all, but the simulation %s has %d: they did not replay the same requests", m.Source, mp, s.Source, sp)
	}
	mo, so := m.MeanOutputTokens(), s.MeanOutputTokens()
	if mo > 0 && so > 0 && math.Abs(mo-so) > OutputTokenTolerance*max(mo, so) {
		return fmt.Errorf("%s: %.1f output tokens per completed request, but the simulation %s has %.1f (%.2fx, %+.1f%%): the runs generated different lengths (run the benchmark with --ignore-eos, or simulate the measured output lengths)",
			m.Source, mo, s.Source, so, so/mo, 100*(so-mo)/mo)
	}
	return nil
}

// SameModel reports whether two model labels name the same model: catalog
// names, their aliases, Hugging Face repository ids ("meta-llama/
// Llama-3.1-8B-Instruct"), local paths and config.json paths all reduce to a
// canonical name first.
func SameModel(a, b string) bool {
	return canonicalModel(a) == canonicalModel(b)
}

func canonicalModel(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimRight(n, "/")
	if c, ok := spec.CanonicalModelName(n); ok {
		return c
	}
	if i := strings.LastIndex(n, "/"); i >= 0 {
		n = n[i+1:]
	}
	n = strings.TrimSuffix(n, ".json")
	for _, suffix := range []string{"", "-instruct", "-hf", "-chat", "-base"} {
		if c, ok := spec.CanonicalModelName(strings.TrimSuffix(n, suffix)); ok {
			return c
		}
	}
	var b strings.Builder
	for _, r := range n {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
