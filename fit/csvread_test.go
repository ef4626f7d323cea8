package fit

import (
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// readFrontierCSV is a minimal reader of Frontier linear_op / attention
// CSVs for experiments (the real path is ingest).
func readFrontierCSV(t testing.TB, path string) map[spec.OpKey][]Row {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[strings.TrimSpace(h)] = i
	}
	get := func(r []string, name string) string {
		if i, ok := col[name]; ok && i < len(r) {
			return strings.TrimSpace(r[i])
		}
		return ""
	}
	num := func(r []string, name string) float64 {
		v, _ := strconv.ParseFloat(get(r, name), 64)
		return v
	}
	var ops []string
	for h := range col {
		if strings.HasPrefix(h, "time_stats.") && strings.HasSuffix(h, ".median") {
			ops = append(ops, strings.TrimSuffix(strings.TrimPrefix(h, "time_stats."), ".median"))
		}
	}
	out := map[spec.OpKey][]Row{}
	for li, r := range recs[1:] {
		if get(r, "is_mixed_batch") == "True" || get(r, "is_true_mixed_batch") == "True" {
			continue
		}
		tp := int(num(r, "num_tensor_parallel_workers"))
		group := "blank"
		if get(r, "is_true_mixed_batch") != "" {
			group = "is_true_mixed_batch=" + get(r, "is_true_mixed_batch")
		}
		for _, op := range ops {
			s := get(r, "time_stats."+op+".median")
			if s == "" {
				continue
			}
			ms, _ := strconv.ParseFloat(s, 64)
			if ms <= 0 {
				continue
			}
			var x []float64
			chunk, kv, bs := num(r, "prefill_chunk_size"), num(r, "kv_cache_size"), num(r, "batch_size")
			switch op {
			case spec.OpAttnPrefill:
				if chunk == 0 {
					continue
				}
				x = []float64{kv, chunk}
			case spec.OpAttnDecode:
				if chunk != 0 {
					continue
				}
				x = []float64{bs, kv}
			case spec.OpAttnInputReshape, spec.OpAttnKVCacheSave, spec.OpAttnOutputReshape:
				x = []float64{max(chunk, bs)}
			default:
				x = []float64{num(r, "num_tokens")}
			}
			k := spec.OpKey{Op: op, Measurement: spec.CUDAEvent, TP: tp}
			out[k] = append(out[k], Row{X: x, TimeMs: ms, Group: group, Source: path, Line: li + 2})
		}
	}
	return out
}
