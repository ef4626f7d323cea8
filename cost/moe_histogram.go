package cost

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ExpertHistogram is a measured count of the tokens each expert of each
// MoE layer received over some run, such as vLLM's expert-load statistics
// (the per-layer, per-expert token counts its expert-parallel load
// balancer records). Replay routing takes each layer's shares as that
// layer's expert popularity.
type ExpertHistogram struct {
	// Tokens maps a model layer index (0-based) to the tokens of each
	// expert.
	Tokens map[int][]float64
}

// ReadExpertHistogram reads a histogram CSV with a header naming the
// columns layer, expert and tokens (in any order; other columns are
// ignored): one row per layer and expert, layers 0-based model layer
// indices, experts 0 to experts-1. Experts a layer does not list received
// no tokens.
func ReadExpertHistogram(path string, experts int) (*ExpertHistogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("expert histogram %s: %w", path, err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("expert histogram %s line 1: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, need := range []string{"layer", "expert", "tokens"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("expert histogram %s line 1: missing column %q (need layer, expert, tokens)", path, need)
		}
	}
	h := &ExpertHistogram{Tokens: map[int][]float64{}}
	seen := map[[2]int]bool{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("expert histogram %s line %d: %w", path, line, err)
		}
		cell := func(name string) (string, error) {
			i := col[name]
			if i >= len(rec) {
				return "", fmt.Errorf("expert histogram %s line %d column %s: missing", path, line, name)
			}
			return strings.TrimSpace(rec[i]), nil
		}
		var layer, expert int
		var tokens float64
		for _, c := range []struct {
			name string
			set  func(string) error
		}{
			{"layer", func(v string) (err error) {
				layer, err = strconv.Atoi(v)
				if err == nil && layer < 0 {
					err = errors.New("negative")
				}
				return err
			}},
			{"expert", func(v string) (err error) {
				expert, err = strconv.Atoi(v)
				if err == nil && (expert < 0 || expert >= experts) {
					err = fmt.Errorf("outside 0..%d (the model has %d experts)", experts-1, experts)
				}
				return err
			}},
			{"tokens", func(v string) (err error) {
				tokens, err = strconv.ParseFloat(v, 64)
				if err == nil && (tokens < 0 || math.IsInf(tokens, 0) || math.IsNaN(tokens)) {
					err = errors.New("not a non-negative count")
				}
				return err
			}},
		} {
			v, err := cell(c.name)
			if err != nil {
				return nil, err
			}
			if err := c.set(v); err != nil {
				return nil, fmt.Errorf("expert histogram %s line %d column %s: %q: %v", path, line, c.name, v, err)
			}
		}
		if seen[[2]int{layer, expert}] {
			return nil, fmt.Errorf("expert histogram %s line %d: layer %d expert %d listed twice", path, line, layer, expert)
		}
		seen[[2]int{layer, expert}] = true
		if h.Tokens[layer] == nil {
			h.Tokens[layer] = make([]float64, experts)
		}
		h.Tokens[layer][expert] = tokens
	}
	if len(h.Tokens) == 0 {
		return nil, fmt.Errorf("expert histogram %s: no rows", path)
	}
	return h, nil
}

// layerWeights returns the popularity of layer's experts: its own row, or
// the only layer's when the histogram has one layer (then used for every
// layer).
func (h *ExpertHistogram) layerWeights(path string, layer int) ([]float64, error) {
	if w, ok := h.Tokens[layer]; ok {
		return w, nil
	}
	if len(h.Tokens) == 1 {
		for _, w := range h.Tokens {
			return w, nil
		}
	}
	layers := make([]int, 0, len(h.Tokens))
	for l := range h.Tokens {
		layers = append(layers, l)
	}
	slices.Sort(layers)
	return nil, fmt.Errorf("expert histogram %s: no rows for MoE layer %d (it has layers %v; a histogram of one layer applies to all)", path, layer, layers)
}
