package kerneldb

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"
)

// heldOutMAPE rebuilds a table from the rows keep selects and returns the
// mean absolute percentage error of lookups at the other rows.
func heldOutMAPE(rows int, keep func(i int) bool, build func(keep func(int) bool) *Kernels, query func(k *Kernels, i int) (float64, float64)) (float64, int) {
	k := build(keep)
	var sum float64
	n := 0
	for i := 0; i < rows; i++ {
		if keep(i) {
			continue
		}
		got, want := query(k, i)
		if math.IsNaN(got) {
			continue
		}
		sum += math.Abs(got-want) / want * 100
		n++
	}
	return sum / float64(max(n, 1)), n
}

// oddIndex marks the values of a sorted list at odd positions (inner ones
// only: the ends stay measured, so lookups interpolate).
func oddIndex(vals []int) map[int]bool {
	sort.Ints(vals)
	out := map[int]bool{}
	for i, v := range vals {
		if i%2 == 1 && i < len(vals)-1 {
			out[v] = true
		}
	}
	return out
}

func distinct(f func(i int) int, n int) []int {
	seen := map[int]bool{}
	var out []int
	for i := 0; i < n; i++ {
		if v := f(i); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// BenchmarkKernelTableInterpolation measures the lookup rules between
// measured shapes on H100 SXM's vLLM 0.14.0 tables (testdata): every
// other inner value of one dimension is held out, the table rebuilt from
// the rest, and the held-out rows looked up: GEMM M (linear along M),
// GEMM N (the work-scaled log-linear blend), decode KV length and batch
// (linear), fused-MoE tokens (linear).
func BenchmarkKernelTableInterpolation(b *testing.B) {
	dir := filepath.Join("..", "testdata", "aiconfigurator", "h100_sxm")
	gemm, err := ReadTable(filepath.Join(dir, "gemm/vllm/0.14.0/gemm_perf.parquet"))
	if err != nil {
		b.Fatal(err)
	}
	gen, err := ReadTable(filepath.Join(dir, "attention/vllm/0.14.0/generation_attention_perf.parquet"))
	if err != nil {
		b.Fatal(err)
	}
	moe, err := ReadTable(filepath.Join(dir, "moe/vllm/0.14.0/moe_perf.parquet"))
	if err != nil {
		b.Fatal(err)
	}
	g := gemm.GEMM
	buildGEMM := func(keep func(int) bool) *Kernels {
		k := &Kernels{Sources: map[string]string{}}
		var rows []GEMMRow
		for i := range g {
			if keep(i) {
				rows = append(rows, g[i])
			}
		}
		k.buildGEMM(rows)
		return k
	}
	qGEMM := func(k *Kernels, i int) (float64, float64) {
		ms, _ := k.GEMM(g[i].Dtype, float64(g[i].M), float64(g[i].N), float64(g[i].K))
		return ms, g[i].LatencyMs
	}
	a := gen.Attention
	buildGen := func(keep func(int) bool) *Kernels {
		k := &Kernels{Sources: map[string]string{}}
		var rows []AttentionRow
		for i := range a {
			if keep(i) {
				rows = append(rows, a[i])
			}
		}
		k.gen, k.genByDim = k.buildAttention(rows, TableGenAttention)
		return k
	}
	qGen := func(k *Kernels, i int) (float64, float64) {
		r := a[i]
		ms, _ := k.GenerationAttention(r.KVCacheDtype, r.Heads, r.KVHeads, r.HeadDim, float64(r.Batch), float64(r.KVLen()))
		return ms, r.LatencyMs
	}
	mo := moe.MoE
	buildMoE := func(keep func(int) bool) *Kernels {
		k := &Kernels{Sources: map[string]string{}}
		var rows []MoERow
		for i := range mo {
			if keep(i) {
				rows = append(rows, mo[i])
			}
		}
		k.buildMoE(rows)
		return k
	}
	qMoE := func(k *Kernels, i int) (float64, float64) {
		r := mo[i]
		ms, _ := k.MoE(r.Dtype, r.Distribution, r.Hidden, r.InterSize, r.TopK, r.Experts, r.MoETP, r.MoEEP, float64(r.NumTokens))
		return ms, r.LatencyMs
	}
	heldM := oddIndex(distinct(func(i int) int { return g[i].M }, len(g)))
	heldN := oddIndex(distinct(func(i int) int { return g[i].N }, len(g)))
	heldKV := oddIndex(distinct(func(i int) int { return a[i].KVLen() }, len(a)))
	heldB := oddIndex(distinct(func(i int) int { return a[i].Batch }, len(a)))
	heldT := oddIndex(distinct(func(i int) int { return mo[i].NumTokens }, len(mo)))
	for i := 0; i < b.N; i++ {
		for _, c := range []struct {
			name  string
			rows  int
			keep  func(int) bool
			build func(func(int) bool) *Kernels
			query func(*Kernels, int) (float64, float64)
		}{
			{"gemm_perf, every other M held out", len(g), func(j int) bool { return !heldM[g[j].M] }, buildGEMM, qGEMM},
			{"gemm_perf, every other N held out", len(g), func(j int) bool { return !heldN[g[j].N] }, buildGEMM, qGEMM},
			{"generation_attention_perf, every other KV length held out", len(a), func(j int) bool { return !heldKV[a[j].KVLen()] }, buildGen, qGen},
			{"generation_attention_perf, every other batch held out", len(a), func(j int) bool { return !heldB[a[j].Batch] }, buildGen, qGen},
			{"moe_perf, every other token count held out", len(mo), func(j int) bool { return !heldT[mo[j].NumTokens] }, buildMoE, qMoE},
		} {
			mape, n := heldOutMAPE(c.rows, c.keep, c.build, c.query)
			fmt.Printf("kernel-table lookup, H100 vLLM 0.14.0 %s: %d rows, MAPE %.1f%%\n", c.name, n, mape)
		}
	}
}
