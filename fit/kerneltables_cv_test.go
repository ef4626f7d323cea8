package fit

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/kerneldb"
)

// tableSet is the rows of one kernel table that one forest learns: a
// table's rows of one dtype and kernel source (GEMMs, MoE), KV-cache dtype
// (attention) or launch mode (all-reduce). X holds the table's own shape
// columns (names), what scikit-learn is given; ftk's forest adds the
// physics features work derives from them (tableFeatures).
type tableSet struct {
	name  string
	names []string
	rows  []Row
	// work is the kernel's FLOPs and bytes moved at shape x.
	work func(x []float64) (flops, bytes float64)
}

// gemmBytes is the bytes per element of a GEMM's operands by dtype.
func gemmBytes(dtype string) float64 {
	switch dtype {
	case "bfloat16", "float16":
		return 2
	case "int4_wo", "nvfp4", "w4a16":
		return 0.5
	}
	return 1
}

// moeAlpha is a routing distribution as a number: 0 balanced, else the
// power law's exponent.
func moeAlpha(dist string) float64 {
	if a, ok := strings.CutPrefix(dist, "power_law_"); ok {
		if v, err := strconv.ParseFloat(a, 64); err == nil {
			return v
		}
	}
	return 0
}

// tableSets splits the rows of one kernel table into forests' rows.
func tableSets(t *kerneldb.Table) []tableSet {
	by := map[string]*tableSet{}
	var order []string
	add := func(name string, names []string, work func([]float64) (float64, float64), x []float64, ms float64, line int) {
		s, ok := by[name]
		if !ok {
			s = &tableSet{name: name, names: names, work: work}
			by[name] = s
			order = append(order, name)
		}
		s.rows = append(s.rows, Row{X: x, TimeMs: ms, Source: t.Path, Line: line})
	}
	for i, r := range t.GEMM {
		eb := gemmBytes(r.Dtype)
		work := func(x []float64) (float64, float64) {
			m, n, k := x[0], x[1], x[2]
			return 2 * m * n * k, (m*k+k*n)*eb + 2*m*n
		}
		add(fmt.Sprintf("%s %s [%s]", t.Name, r.Dtype, r.KernelSource), []string{"m", "n", "k"}, work,
			[]float64{float64(r.M), float64(r.N), float64(r.K)}, r.LatencyMs, i)
	}
	for i, r := range t.Attention {
		kb := gemmBytes(r.KVCacheDtype)
		if r.Context {
			// Causal prefill: half the query-key pairs (a sliding window
			// of w tokens: about s x w of them); Q, K, V and the output
			// each read or written once.
			work := func(x []float64) (float64, float64) {
				b, s, h, kv, d := x[0], x[1], x[2], x[3], x[4]
				pairs := s * s / 2
				if w := window(x); w > 0 && w < s {
					pairs = s*w - w*w/2
				}
				return 4 * b * h * d * pairs, b * s * d * (2*h + 2*kv*kb)
			}
			add(fmt.Sprintf("%s kv %s [%s]", t.Name, r.KVCacheDtype, r.KernelSource), []string{"batch", "isl", "heads", "kv_heads", "head_dim", "window_size"}, work,
				[]float64{float64(r.Batch), float64(r.ISL), float64(r.Heads), float64(r.KVHeads), float64(r.HeadDim), float64(r.WindowSize)}, r.LatencyMs, i)
			continue
		}
		// Decode: one query token per sequence against its KV cache (the
		// last w tokens of it with a sliding window of w).
		work := func(x []float64) (float64, float64) {
			b, l, h, kv, d := x[0], x[1], x[2], x[3], x[4]
			if w := window(x); w > 0 {
				l = math.Min(l, w)
			}
			return 4 * b * h * d * l, 2*b*l*kv*d*kb + 4*b*h*d
		}
		add(fmt.Sprintf("%s kv %s [%s]", t.Name, r.KVCacheDtype, r.KernelSource), []string{"batch", "kv_len", "heads", "kv_heads", "head_dim", "window_size"}, work,
			[]float64{float64(r.Batch), float64(r.KVLen()), float64(r.Heads), float64(r.KVHeads), float64(r.HeadDim), float64(r.WindowSize)}, r.LatencyMs, i)
	}
	for i, r := range t.MoE {
		eb := gemmBytes(r.Dtype)
		// One GPU of the MoE group: Experts/EP experts, each InterSize/TP
		// wide (gate, up and down projections); routed tokens spread over
		// the experts, so the weights read are those of the experts a
		// balanced routing touches.
		work := func(x []float64) (float64, float64) {
			tok, hid, inter, topk, e, tp, ep := x[0], x[1], x[2], x[3], x[4], x[5], x[6]
			w := 3 * hid * inter / tp
			local := e / ep
			touched := local * (1 - math.Pow(1-topk/e, tok))
			return 2 * tok * topk / ep * w, touched*w*eb + 4*tok*hid
		}
		add(fmt.Sprintf("%s %s [%s]", t.Name, r.Dtype, r.KernelSource), []string{"num_tokens", "hidden", "inter_size", "topk", "experts", "moe_tp", "moe_ep", "power_law_alpha"}, work,
			[]float64{float64(r.NumTokens), float64(r.Hidden), float64(r.InterSize), float64(r.TopK), float64(r.Experts), float64(r.MoETP), float64(r.MoEEP), moeAlpha(r.Distribution)}, r.LatencyMs, i)
	}
	for i, r := range t.AllReduce {
		// A ring all-reduce moves 2 (g-1)/g of the message per GPU.
		work := func(x []float64) (float64, float64) {
			g, n := x[0], x[1]
			return n, 2 * (g - 1) / g * n * 2
		}
		add(fmt.Sprintf("%s %s [%s]", t.Name, r.Dtype, r.KernelSource), []string{"gpus", "message_size"}, work,
			[]float64{float64(r.GPUs), float64(r.MessageSize)}, r.LatencyMs, i)
	}
	out := make([]tableSet, len(order))
	for i, n := range order {
		out[i] = *by[n]
		dropFullAttention(&out[i])
	}
	return out
}

// window is an attention row's sliding window (0: full attention).
func window(x []float64) float64 {
	if len(x) > 5 {
		return x[5]
	}
	return 0
}

// dropFullAttention drops the window_size column of an attention set
// whose rows all attend over their whole context: a column that is 0
// throughout tells a forest nothing. Where some rows slide a window, the
// column is what tells them from full-attention rows of the same shape.
func dropFullAttention(s *tableSet) {
	if len(s.names) != 6 || s.names[5] != "window_size" {
		return
	}
	for _, r := range s.rows {
		if r.X[5] != 0 {
			return
		}
	}
	s.names = s.names[:5]
	for i := range s.rows {
		s.rows[i].X = s.rows[i].X[:5]
	}
}

// tableFeatures are the features ftk's forest splits on: the table's
// shape columns, then the kernel's FLOPs, bytes and arithmetic intensity.
func tableFeatures(ts *tableSet, x []float64) []float64 {
	fl, by := ts.work(x)
	out := append(slices.Clone(x), fl, by, 0)
	if by > 0 {
		out[len(out)-1] = fl / by
	}
	return out
}

// tableModel is a forest fitted on a table's rows, answering in ms.
type tableModel struct {
	target string
	fb     *bundle.Fallback
	floor  float64
	f      *bundle.Forest
}

func (m *tableModel) predict(ts *tableSet, x []float64) float64 {
	r := m.f.Predict(tableFeatures(ts, x))
	switch m.target {
	case bundle.TargetLog:
		return math.Exp(r)
	case bundle.TargetLogRatio:
		fl, by := ts.work(x)
		return math.Max(m.fb.PredictMs([]float64{fl, by}), m.floor) * math.Exp(r)
	}
	return r
}

// trainTable fits one candidate on rows: the forest on the log time, or
// on the log ratio to a fallback linear in the kernel's FLOPs and bytes
// (fitFallback's non-negative least squares of the relative error).
func trainTable(ts *tableSet, rows []Row, c bundle.SearchResult, workers int) (*tableModel, error) {
	m := &tableModel{target: c.Target, floor: math.Inf(1)}
	xs := make([][]float64, len(rows))
	y := make([]float64, len(rows))
	for i, r := range rows {
		fl, by := ts.work(r.X)
		xs[i], y[i] = []float64{fl, by}, r.TimeMs
		m.floor = math.Min(m.floor, r.TimeMs/10)
	}
	if c.Target == bundle.TargetLogRatio {
		fb, err := fitFallback(nil, "", []string{"flops", "bytes"}, xs, y)
		if err != nil {
			return nil, fmt.Errorf("%s: fallback: %w", ts.name, err)
		}
		m.fb = fb
	}
	fx := make([][]float64, len(rows))
	ty := make([]float64, len(rows))
	for i, r := range rows {
		fx[i] = tableFeatures(ts, r.X)
		switch c.Target {
		case bundle.TargetLogRatio:
			ty[i] = math.Log(y[i] / math.Max(m.fb.PredictMs(xs[i]), m.floor))
		case bundle.TargetLog:
			ty[i] = math.Log(y[i])
		default:
			ty[i] = y[i]
		}
	}
	f, err := trainForest(fx, ty, c.Params, workers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ts.name, err)
	}
	m.f = f
	return m, nil
}

// fitTable is ftk fit's search on a table's rows: every candidate
// (target, leaf size) cross-validated on folds grouped by shape, the best
// trained on every row.
func fitTable(ts *tableSet, rows []Row, opt Options) (*tableModel, bundle.SearchResult, error) {
	opt.defaults()
	seed := keySeed(opt.Seed, ts.name)
	_, n := shapes(rows)
	k := min(opt.Folds, n)
	folds := groupedFolds(rows, k, seed)
	var best bundle.SearchResult
	best.CVMAPE = math.Inf(1)
	for _, c := range candidates(opt.Trees, seed) {
		pred := make([]float64, len(rows))
		for f := 0; f < k; f++ {
			train, test := splitFold(rows, folds, f)
			m, err := trainTable(ts, train, c, opt.Workers)
			if err != nil {
				return nil, best, err
			}
			for _, i := range test {
				pred[i] = m.predict(ts, rows[i].X)
			}
		}
		if c.CVMAPE = errorStats(pred, rows).MAPE; c.CVMAPE < best.CVMAPE {
			best = c
		}
	}
	m, err := trainTable(ts, rows, best, opt.Workers)
	return m, best, err
}

// tableCVRow is one forest of the kernel-table comparison.
type tableCVRow struct {
	gpu, version, name string
	rows, shapes       int
	ftk, sk            float64
	// skPhys is scikit-learn given ftk's features (the table's columns
	// plus FLOPs, bytes and intensity): what the features alone are worth.
	skPhys float64
	chosen string
}

// kernelTableGPUs are the databases BenchmarkCVKernelTables scores: the
// H100 SXM vLLM 0.14.0 tables in testdata, or, with FTK_AICONFIGURATOR
// naming AIConfigurator's databases, every GPU's newest tables there
// (h200_sxm, reserved for independent acceptance, is never read).
func kernelTableGPUs(b *testing.B) (root string, gpus []string, version string) {
	if dir := os.Getenv("FTK_AICONFIGURATOR"); dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() && e.Name() != "h200_sxm" && kerneldb.IsDatabase(filepath.Join(dir, e.Name())) {
				gpus = append(gpus, e.Name())
			}
		}
		return dir, gpus, os.Getenv("FTK_CV_VLLM_VERSION")
	}
	return filepath.Join("..", "testdata", "aiconfigurator"), []string{"h100_sxm"}, "0.14.0"
}

// maxShapesEnv names the environment variable that caps the shapes of
// one forest's rows in BenchmarkCVKernelTables (a seeded draw of that many
// shapes, every row of each kept), so the full databases (up to 60,000
// rows a forest) can be scored in bounded time; unset, every row counts.
const maxShapesEnv = "FTK_CV_MAX_SHAPES"

// capShapes keeps a seeded draw of at most n of the rows' shapes.
func capShapes(rows []Row, n int, seed uint64) []Row {
	id, have := shapes(rows)
	if n <= 0 || have <= n {
		return rows
	}
	perm := rand.New(rand.NewPCG(seed, 0x636170)).Perm(have)
	var out []Row
	for i, r := range rows {
		if perm[id[i]] < n {
			out = append(out, r)
		}
	}
	return out
}

// BenchmarkCVKernelTables prints, per forest of the kernel tables ftk
// prices from (GEMMs by dtype and kernel, context and generation attention
// by KV dtype, fused MoE by dtype and kernel, custom all-reduce by launch
// mode), the 5-fold CV MAPE of ftk's fit (nested: its search sees only the
// training folds) beside scikit-learn's RandomForestRegressor(250) on the
// table's own columns, on the same rows and folds; folds group a shape's
// rows. FTK_CV_ONLY narrows it to the forests whose "gpu version name"
// matches; FTK_AICONFIGURATOR scores the full databases.
func BenchmarkCVKernelTables(b *testing.B) {
	for b.Loop() {
		cvKernelTables(b)
	}
}

func cvKernelTables(b *testing.B) {
	const k = 5
	py := sklearnPython()
	if py == "" {
		fmt.Println("sklearn: not importable by python3 (apt-get install python3-sklearn): ftk column only")
	}
	var only *regexp.Regexp
	if v := os.Getenv(cvOnlyEnv); v != "" {
		var err error
		if only, err = regexp.Compile(v); err != nil {
			b.Fatalf("%s=%q: %v (give a Go regular expression)", cvOnlyEnv, v, err)
		}
	}
	root, gpus, version := kernelTableGPUs(b)
	maxShapes := 0
	if v := os.Getenv(maxShapesEnv); v != "" {
		var err error
		if maxShapes, err = strconv.Atoi(v); err != nil || maxShapes < 10 {
			b.Fatalf("%s=%q: give a number of shapes, at least 10", maxShapesEnv, v)
		}
		fmt.Printf("%s=%d: at most %d shapes a forest (a seeded draw)\n", maxShapesEnv, maxShapes, maxShapes)
	}
	start := time.Now()
	var table []tableCVRow
	for _, gpu := range gpus {
		db, err := kerneldb.Open(filepath.Join(root, gpu))
		if err != nil {
			b.Fatal(err)
		}
		var sets []tableSet
		var versions []string
		for _, name := range []string{kerneldb.TableGEMM, kerneldb.TableContextAttention, kerneldb.TableGenAttention, kerneldb.TableMoE, kerneldb.TableAllReduce} {
			r, err := db.Resolve(name, version)
			if err != nil {
				continue
			}
			t, err := kerneldb.ReadTable(r.Path)
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range tableSets(t) {
				if only == nil || only.MatchString(gpu+" "+r.Measured+" "+s.name) {
					s.rows = capShapes(s.rows, maxShapes, keySeed(1, "cap "+s.name))
					sets, versions = append(sets, s), append(versions, r.Measured)
				}
			}
		}
		if len(sets) == 0 {
			continue
		}
		folds := make([][]int, len(sets))
		for i := range sets {
			folds[i] = groupedFolds(sets[i].rows, k, keySeed(1, "outer "+sets[i].name))
		}
		var sk, skPhys map[string]float64
		if py != "" {
			if sk, err = sklearnOnTables(b, py, sets, folds, false); err != nil {
				b.Fatal(err)
			}
			if skPhys, err = sklearnOnTables(b, py, sets, folds, true); err != nil {
				b.Fatal(err)
			}
		}
		for i := range sets {
			s := &sets[i]
			pred := make([]float64, len(s.rows))
			chosen := map[string]int{}
			for f := 0; f < k; f++ {
				train, test := splitFold(s.rows, folds[i], f)
				m, c, err := fitTable(s, train, Options{Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				chosen[fmt.Sprintf("%s leaf %d", c.Target, c.Params.MinLeaf)]++
				for _, j := range test {
					pred[j] = m.predict(s, s.rows[j].X)
				}
			}
			_, n := shapes(s.rows)
			r := tableCVRow{gpu: gpu, version: versions[i], name: s.name, rows: len(s.rows), shapes: n,
				ftk: errorStats(pred, s.rows).MAPE, sk: math.NaN(), skPhys: math.NaN(), chosen: choices(chosen)}
			if v, ok := sk[s.name]; ok {
				r.sk = v
			}
			if v, ok := skPhys[s.name]; ok {
				r.skPhys = v
			}
			table = append(table, r)
		}
		if len(gpus) > 1 {
			printTableCV(os.Stdout, table[len(table)-len(sets):], py != "")
		}
	}
	printTableCV(os.Stdout, table, py != "")
	fmt.Printf("nested %d-fold CV of %d kernel-table forests (ftk side) took %.1fs on %d CPUs\n", k, len(table), time.Since(start).Seconds(), runtime.GOMAXPROCS(0))
}

// choices lists the candidates the outer folds' searches chose.
func choices(m map[string]int) string {
	var parts []string
	for c, n := range m {
		parts = append(parts, fmt.Sprintf("%s x%d", c, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// sklearnOnTables exports every set's rows (the table's own columns, or
// with phys ftk's features) with their folds and runs the baseline on
// them.
func sklearnOnTables(b *testing.B, py string, sets []tableSet, folds [][]int, phys bool) (map[string]float64, error) {
	path := filepath.Join(b.TempDir(), "tables.csv")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	if err := writeTableFoldsCSV(w, sets, folds, phys); err != nil {
		return nil, err
	}
	w.Flush()
	if err := f.Close(); err != nil {
		return nil, err
	}
	return runSklearn(py, path)
}

// writeTableFoldsCSV writes rows in fit/bench/sklearn_baseline.py's
// format: key, fold, features f0.. (empty past a set's own), time. The
// features are the table's columns, or with phys ftk's (tableFeatures).
func writeTableFoldsCSV(w *csv.Writer, sets []tableSet, folds [][]int, phys bool) error {
	feats := func(s *tableSet, x []float64) []float64 {
		if phys {
			return tableFeatures(s, x)
		}
		return x
	}
	nf := 0
	for _, s := range sets {
		nf = max(nf, len(feats(&s, s.rows[0].X)))
	}
	head := []string{"key", "fold"}
	for j := 0; j < nf; j++ {
		head = append(head, "f"+strconv.Itoa(j))
	}
	if err := w.Write(append(head, "median_ms")); err != nil {
		return err
	}
	for i, s := range sets {
		for j, r := range s.rows {
			rec := make([]string, 2+nf+1)
			rec[0], rec[1] = s.name, strconv.Itoa(folds[i][j])
			for c, v := range feats(&sets[i], r.X) {
				rec[2+c] = strconv.FormatFloat(v, 'g', -1, 64)
			}
			rec[2+nf] = strconv.FormatFloat(r.TimeMs, 'g', -1, 64)
			if err := w.Write(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

func printTableCV(w io.Writer, table []tableCVRow, haveSk bool) {
	fmt.Fprintln(w, "\nKernel tables: 5-fold CV MAPE per forest, folds grouped by shape; ftk nested (its target and leaf search sees only the training folds), features the table's columns plus FLOPs, bytes and arithmetic intensity; sklearn: RandomForestRegressor(n_estimators=250) on the table's columns, time target, identical rows and folds")
	if !haveSk {
		fmt.Fprintln(w, "sklearn: not installed (apt-get install python3-sklearn): ftk column only")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tVLLM\tTABLE\tROWS\tSHAPES\tCV FTK %\tCV SKLEARN %\tFTK-SK\tSKLEARN, FTK'S FEATURES %\tFTK CHOSE")
	var sf, ss, sp float64
	var n, worse int
	for _, r := range table {
		d, mark := r.ftk-r.sk, ""
		if d > 0.5 {
			mark, worse = "  worse", worse+1
		}
		if !math.IsNaN(r.sk) {
			sf, ss, sp, n = sf+r.ftk, ss+r.sk, sp+r.skPhys, n+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.2f\t%s\t%s%s\t%s\t%s\n", r.gpu, r.version, r.name, r.rows, r.shapes, r.ftk, num(r.sk), num(d), mark, num(r.skPhys), r.chosen)
	}
	tw.Flush()
	if n > 0 {
		fmt.Fprintf(w, "mean over %d forests: CV ftk %.2f%%, sklearn %.2f%% (given ftk's features %.2f%%); %d forests worse than sklearn by more than 0.5 points\n", n, sf/float64(n), ss/float64(n), sp/float64(n), worse)
	}
}
