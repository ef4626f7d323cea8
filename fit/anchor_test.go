package fit

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/ftk-dev/ftk/spec"
)

// anchorFeatures are the features the anchors (Vidur, Frontier) train on
// (docs/formats.md): prefill [kv_cache_size, prefill_chunk_size^2], decode
// [batch_size, kv_cache_size], every other operator its base features.
func anchorFeatures(op string, x []float64) []float64 {
	if op == spec.OpAttnPrefill {
		return []float64{x[0], x[1] * x[1]}
	}
	return x
}

// writeFoldsCSV writes the rows of one predictor with their fold and anchor
// features, for fit/bench/sklearn_baseline.py.
func writeFoldsCSV(w *csv.Writer, header bool, key spec.OpKey, rows []Row, folds []int) error {
	if header {
		if err := w.Write([]string{"key", "fold", "f0", "f1", "f2", "median_ms"}); err != nil {
			return err
		}
	}
	for i, r := range rows {
		rec := []string{key.String(), strconv.Itoa(folds[i]), "", "", ""}
		for j, v := range anchorFeatures(key.Op, r.X) {
			rec[2+j] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		rec = append(rec, strconv.FormatFloat(r.TimeMs, 'g', -1, 64))
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	return nil
}

// readBaseline parses the script's "key,mape_pct" output.
func readBaseline(r io.Reader) (map[string]float64, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, rec := range recs[1:] {
		v, err := strconv.ParseFloat(rec[1], 64)
		if err != nil {
			return nil, fmt.Errorf("sklearn baseline: %q: %w", rec, err)
		}
		out[rec[0]] = v
	}
	return out, nil
}
