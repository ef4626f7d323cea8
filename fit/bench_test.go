package fit

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// The A800 benchmarks: the real full-size Qwen3-30B-A3B profiles.
const a800 = "frontier-a800-qwen3-30b-a3b"

// nestedCV returns out-of-fold predictions of the whole fit procedure:
// for every outer fold, the hyperparameter search runs by inner k-fold CV
// on the other folds only, and the chosen candidate trained on them
// predicts the fold. No choice sees the rows it is scored on.
func nestedCV(si shapeInfo, rows []Row, folds []int, k int, opt Options) ([]float64, error) {
	opt.defaults()
	pred := make([]float64, len(rows))
	for f := 0; f < k; f++ {
		train, test := splitFold(rows, folds, f)
		seed := keySeed(opt.Seed, fmt.Sprint(si.key, f))
		inner := assignFolds(len(train), k, seed)
		best, bestMAPE := bundle.SearchResult{}, math.Inf(1)
		for _, c := range candidates(opt.Trees, seed) {
			p, err := crossValidate(si, train, inner, k, c.Target, c.Params, opt.Workers)
			if err != nil {
				return nil, err
			}
			if e := errorStats(p, train).MAPE; e < bestMAPE {
				best, bestMAPE = c, e
			}
		}
		m, err := trainModel(si, train, best.Target, best.Params, opt.Workers)
		if err != nil {
			return nil, err
		}
		for _, i := range test {
			pred[i] = m.Predict(rows[i].X)
		}
	}
	return pred, nil
}

// sklearnPython returns a python3 that imports sklearn, or "".
func sklearnPython() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import sklearn").Run() == nil {
			return py
		}
	}
	return ""
}

// runSklearn trains the anchors' forest on the exported folds.
func runSklearn(py, foldsCSV string) (map[string]float64, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(py, "bench/sklearn_baseline.py", foldsCSV)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sklearn baseline: %v: %s", err, errb.String())
	}
	return readBaseline(&out)
}

type cvRow struct {
	key                       spec.OpKey
	rows, all                 int
	ftk, sk, anchorSk, ftkAll float64
}

var cvOnce sync.Once

// BenchmarkCVFrontierA800 prints the 5-fold CV MAPE of every predictor of
// the A800 profiles (nested: the search never sees the fold it is scored
// on) beside scikit-learn's RandomForestRegressor trained the anchors' way
// on identical rows and folds.
func BenchmarkCVFrontierA800(b *testing.B) {
	ts := trainingSet(b, a800)
	m, err := spec.LookupModel(ts.Model)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cvOnce.Do(func() { cvTable(b, ts, m) })
	}
}

func cvTable(b *testing.B, ts *TrainingSet, m *spec.Model) {
	const k = 5
	opt := Options{Seed: 1}
	dir := b.TempDir()
	kept, err := os.Create(filepath.Join(dir, "kept.csv"))
	if err != nil {
		b.Fatal(err)
	}
	anchor, err := os.Create(filepath.Join(dir, "anchor.csv"))
	if err != nil {
		b.Fatal(err)
	}
	kw, aw := csv.NewWriter(kept), csv.NewWriter(anchor)
	var table []cvRow
	var anchorKeys int
	start := time.Now()
	for i, o := range ts.Ops {
		op, note := bundle.OpShape(m, o.Key)
		si := shapeInfo{key: o.Key, op: op, note: note, names: spec.OpFeatures(o.Key.Op)}
		seed := keySeed(opt.Seed, o.Key.String())
		rows, dropped, err := resolveConflicts(si, o.Rows, seed)
		if err != nil {
			b.Fatal(err)
		}
		folds := assignFolds(len(rows), k, seed)
		pred, err := nestedCV(si, rows, folds, k, opt)
		if err != nil {
			b.Fatal(err)
		}
		r := cvRow{key: o.Key, rows: len(rows), all: len(o.Rows), ftk: errorStats(pred, rows).MAPE, anchorSk: math.NaN(), ftkAll: math.NaN()}
		if err := writeFoldsCSV(kw, i == 0, o.Key, rows, folds); err != nil {
			b.Fatal(err)
		}
		// Where rows were dropped, also score both on the rows the
		// anchors train on: every single-sequence (pure) row.
		if len(dropped) > 0 {
			var pure []Row
			for _, r := range o.Rows {
				if r.Group == bundle.PrimaryGroup {
					pure = append(pure, r)
				}
			}
			pf := assignFolds(len(pure), k, seed)
			pp, err := nestedCV(si, pure, pf, k, opt)
			if err != nil {
				b.Fatal(err)
			}
			r.ftkAll = errorStats(pp, pure).MAPE
			if err := writeFoldsCSV(aw, anchorKeys == 0, o.Key, pure, pf); err != nil {
				b.Fatal(err)
			}
			anchorKeys++
		}
		table = append(table, r)
	}
	kw.Flush()
	aw.Flush()
	kept.Close()
	anchor.Close()
	ftkTime := time.Since(start)
	py := sklearnPython()
	var sk, ask map[string]float64
	if py != "" {
		if sk, err = runSklearn(py, kept.Name()); err != nil {
			b.Fatal(err)
		}
		if ask, err = runSklearn(py, anchor.Name()); err != nil {
			b.Fatal(err)
		}
	}
	for i := range table {
		table[i].sk, table[i].anchorSk = math.NaN(), math.NaN()
		if v, ok := sk[table[i].key.String()]; ok {
			table[i].sk = v
		}
		if v, ok := ask[table[i].key.String()]; ok {
			table[i].anchorSk = v
		}
	}
	printCVTable(os.Stdout, table, py != "")
	fmt.Printf("nested %d-fold CV of %d predictors took %.1fs on %d CPUs\n", k, len(table), ftkTime.Seconds(), runtime.GOMAXPROCS(0))
}

func printCVTable(w *os.File, table []cvRow, haveSk bool) {
	sort.Slice(table, func(i, j int) bool {
		a, b := table[i].key, table[j].key
		if a.TP != b.TP {
			return a.TP < b.TP
		}
		return a.Op < b.Op
	})
	fmt.Fprintf(w, "\n5-fold CV MAPE per operator and TP (A800, Qwen3-30B-A3B, CUDA_EVENT); ftk: nested CV of the full fit (search included), sklearn: RandomForestRegressor(n_estimators=250), anchor features, median target, identical rows and folds\n")
	if !haveSk {
		fmt.Fprintln(w, "sklearn: not installed (apt-get install python3-sklearn)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OPERATOR\tTP\tROWS\tFTK %\tSKLEARN %\tFTK-SK\t\tALL PURE ROWS: FTK %\tSKLEARN %\t")
	var sf, ss float64
	var n, worse int
	for _, r := range table {
		diff := r.ftk - r.sk
		mark := ""
		if diff > 0.5 {
			mark, worse = "  worse", worse+1
		}
		if !math.IsNaN(r.sk) {
			sf, ss, n = sf+r.ftk, ss+r.sk, n+1
		}
		extra := "\t\t"
		if !math.IsNaN(r.ftkAll) {
			extra = fmt.Sprintf("%.2f\t%s\t", r.ftkAll, num(r.anchorSk))
		}
		rows := fmt.Sprint(r.rows)
		if r.rows != r.all {
			rows = fmt.Sprintf("%d/%d", r.rows, r.all)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%s\t%s%s\t\t%s\n", r.key.Op, r.key.TP, rows, r.ftk, num(r.sk), num(diff), mark, extra)
	}
	tw.Flush()
	if n > 0 {
		fmt.Fprintf(w, "mean over %d predictors: ftk %.2f%%, sklearn %.2f%%; predictors worse than sklearn by more than 0.5 points: %d\n", n, sf/float64(n), ss/float64(n), worse)
	}
	fmt.Fprintln(w, "ROWS kept/all: rows left after dropping conflicting duplicates and inconsistent variants (see ftk fit's log); ALL PURE ROWS: the same CV on every single-sequence row, as the anchors train")
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// a800Bundle fits the A800 profiles once per benchmark binary.
var a800Bundle = sync.OnceValues(func() (*bundle.Bundle, error) {
	ts, err := fixtureTrainingSet(a800)
	if err != nil {
		return nil, err
	}
	return Fit(ts, Options{Seed: 1})
})

// BenchmarkFitFrontierA800 times training every predictor of the A800
// profiles (conflict checks, search, CV, holdout, final forests).
func BenchmarkFitFrontierA800(b *testing.B) {
	ts := trainingSet(b, a800)
	for b.Loop() {
		start, cpu0 := time.Now(), cpuTime()
		bundle, err := Fit(ts, Options{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		s, cpu := time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
		b.ReportMetric(s, "fit_s")
		b.ReportMetric(cpu, "fit_cpu_s")
		b.ReportMetric(float64(len(bundle.Keys())), "predictors")
		fmt.Printf("fit: trained %d predictors of %s in %.1fs wall, %.1fs CPU, on %d CPUs\n", len(bundle.Keys()), a800, s, cpu, runtime.GOMAXPROCS(0))
	}
}

// BenchmarkLoadBundle times loading the A800 bundle (read, checksum,
// rebuild) and compiling every lookup grid, in a fresh process: what
// "ftk simulate" pays, without this benchmark binary's heap in the way.
func BenchmarkLoadBundle(b *testing.B) {
	bundle, err := a800Bundle()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "a800.bundle.arrow")
	if err := bundle.Write(path); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.ReportMetric(float64(st.Size())/1e6, "MB")
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), loadChildEnv+"="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("load in a child process: %v\n%s", err, out)
		}
		var loadMs, cpuMs, compileMs float64
		if _, err := fmt.Sscanf(string(out), "load_ms=%g load_cpu_ms=%g load+compile_ms=%g", &loadMs, &cpuMs, &compileMs); err != nil {
			b.Fatalf("child output %q: %v", out, err)
		}
		b.ReportMetric(loadMs, "load_ms")
		b.ReportMetric(cpuMs, "load_cpu_ms")
		b.ReportMetric(compileMs, "load+compile_ms")
	}
}

// loadChildEnv names the bundle a child process of BenchmarkLoadBundle
// loads (see TestMain).
const loadChildEnv = "FTK_FIT_LOAD_CHILD"

// loadChild loads the bundle at path, prints the timings and returns the
// exit code.
func loadChild(path string) int {
	start, cpu0 := time.Now(), cpuTime()
	b, err := bundle.Load(path)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	loaded, cpu := time.Since(start), cpuTime()-cpu0
	b.Compile()
	fmt.Printf("load_ms=%g load_cpu_ms=%g load+compile_ms=%g\n", ms(loaded), ms(cpu), ms(time.Since(start)))
	return 0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkPredict measures single predictions of the A800 predictors
// (grid lookups), one core, on queries spread over each domain.
func BenchmarkPredict(b *testing.B) {
	bundle, err := a800Bundle()
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"attn_prefill tp=2", "attn_decode tp=8", "attn_pre_proj tp=1"} {
		var key spec.OpKey
		for _, k := range bundle.Keys() {
			if strings.HasPrefix(k.String(), strings.Fields(name)[0]+"[") && strings.HasSuffix(k.String(), strings.Fields(name)[1]+"]") {
				key = k
			}
		}
		p, ok := bundle.Predictor(key)
		if !ok {
			b.Fatalf("no predictor %s", name)
		}
		qs := queries(p, 4096)
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			// Each iteration is 1<<20 predictions, so -benchtime 1x
			// measures something.
			const per = 1 << 20
			var s float64
			for b.Loop() {
				for i := 0; i < per; i++ {
					s += p.PredictMs(qs[i&4095])
				}
			}
			b.ReportMetric(float64(b.N)*per/b.Elapsed().Seconds(), "predictions/s")
			b.ReportMetric(b.Elapsed().Seconds()*1e9/(float64(b.N)*per), "ns/prediction")
			if math.IsNaN(s) {
				b.Fatal("NaN prediction")
			}
		})
	}
}

// queries spreads n in-domain points over a predictor's domain.
func queries(p *bundle.Predictor, n int) [][]float64 {
	dom := p.Domain()
	out := make([][]float64, n)
	for i := range out {
		x := make([]float64, len(dom))
		for j, r := range dom {
			f := math.Mod(float64(i)*(0.618034+0.1*float64(j)), 1)
			x[j] = math.Round(r.Min + f*(r.Max-r.Min))
		}
		out[i] = x
	}
	return out
}
