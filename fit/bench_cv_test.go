package fit

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// realProfiles are the profile sets of testdata/profiles that one dataset
// each can hold (one device and model, or collectives): every real profile
// the project has.
var realProfiles = []string{
	a800,
	"frontier-h800/Qwen3-30B-A3B-tiny",
	"frontier-h800/Phi-tiny-MoE-instruct",
	"frontier-h800/llama2_7b_dense_example",
	"vidur-h100/Llama-2-7b-hf",
	"vidur-h100/network-h100_dgx",
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

// runSklearn trains the anchors' forest on the exported folds. Its answer
// depends only on the script and the folds file (random_state=0), so it is
// kept under the user's cache directory by their SHA-256 and read back the
// next time the same rows and folds come: a benchmark run that changes
// only ftk does not wait for scikit-learn again.
func runSklearn(py, foldsCSV string) (map[string]float64, error) {
	const script = "bench/sklearn_baseline.py"
	h := sha256.New()
	for _, p := range []string{script, foldsCSV} {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("sklearn baseline: %w", err)
		}
		h.Write(data)
	}
	cached := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cached = filepath.Join(dir, "ftk-sklearn-baseline", hex.EncodeToString(h.Sum(nil))+".csv")
		if data, err := os.ReadFile(cached); err == nil {
			return readBaseline(bytes.NewReader(data))
		}
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(py, script, foldsCSV)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sklearn baseline: %v: %s", err, errb.String())
	}
	if cached != "" && os.MkdirAll(filepath.Dir(cached), 0o755) == nil {
		tmp := cached + ".tmp" + fmt.Sprint(os.Getpid())
		if os.WriteFile(tmp, out.Bytes(), 0o644) == nil {
			os.Rename(tmp, cached)
		}
	}
	return readBaseline(&out)
}

// outerFolds deals every key's rows of positive time into k folds grouped
// by shape; rows of 0 ms (no percentage error) are left out.
func outerFolds(ts *TrainingSet, k int, seed uint64) ([][]Row, [][]int) {
	rows := make([][]Row, len(ts.Ops))
	folds := make([][]int, len(ts.Ops))
	for i, o := range ts.Ops {
		rows[i], _ = positiveRows(o.Rows)
		folds[i] = groupedFolds(rows[i], k, keySeed(seed, "outer "+o.Key.String()))
	}
	return rows, folds
}

// nestedFit returns out-of-fold predictions of the whole fit (pooling,
// search, fallback choice included): for every outer fold, ftk fit trains
// on the rows of every key outside it and predicts the rows in it. A row
// whose key has no rows outside its fold is NaN.
func nestedFit(ts *TrainingSet, rows [][]Row, folds [][]int, k int, opt Options) ([][]float64, error) {
	pred := make([][]float64, len(rows))
	for i := range rows {
		pred[i] = make([]float64, len(rows[i]))
		for j := range pred[i] {
			pred[i][j] = math.NaN()
		}
	}
	for f := 0; f < k; f++ {
		sub := &TrainingSet{Device: ts.Device, Model: ts.Model, Measurement: ts.Measurement, Checksum: "outer"}
		var at []int
		for i, o := range ts.Ops {
			train, _ := splitFold(rows[i], folds[i], f)
			if len(train) > 0 {
				sub.Ops = append(sub.Ops, OpRows{Key: o.Key, Rows: train})
				at = append(at, i)
			}
		}
		if len(sub.Ops) == 0 {
			continue
		}
		b, err := Fit(sub, opt)
		if err != nil {
			return nil, err
		}
		for _, i := range at {
			p, _ := b.Predictor(ts.Ops[i].Key)
			for j, r := range rows[i] {
				if folds[i][j] == f {
					pred[i][j] = p.PredictUncounted(r.X)
				}
			}
		}
	}
	return pred, nil
}

// cvRow is one predictor of the comparison table.
type cvRow struct {
	profile string
	key     spec.OpKey
	rows    int
	ftk, sk float64
	// ftkIn and skIn are in-sample: trained on every row, scored on
	// every row (ftk: the bundle's all-rows error).
	ftkIn, skIn float64
	noise       float64
}

var cvOnce sync.Once

// cvOnlyEnv names the environment variable that narrows BenchmarkCVProfiles
// to the operators whose "profile measurement operator" it matches (a
// regular expression), e.g. FTK_CV_ONLY='H800.* KERNEL_ONLY moe_grouped_gemm$'.
// An operator's keys are kept or left out together (a fit pools within an
// operator only), so every kept predictor scores as in the full run.
const cvOnlyEnv = "FTK_CV_ONLY"

// keepOps narrows ts to the operators only matches, given as "prof meas op".
func keepOps(ts *TrainingSet, prof, meas string, only *regexp.Regexp) {
	if only == nil {
		return
	}
	var kept []OpRows
	for _, o := range ts.Ops {
		if only.MatchString(prof + " " + meas + " " + o.Key.Op) {
			kept = append(kept, o)
		}
	}
	ts.Ops = kept
}

// BenchmarkCVProfiles prints, for every real profile in testdata and each
// of its measurement types, the 5-fold CV MAPE of every predictor on all
// rows (nothing dropped; folds group a shape's repeats) for ftk's whole fit
// (nested: pooling, search and fallback choice see only the training
// folds) beside scikit-learn's RandomForestRegressor trained the anchors'
// way on the same rows and folds, and the noise floor of the repeats.
func BenchmarkCVProfiles(b *testing.B) {
	for b.Loop() {
		cvOnce.Do(func() { cvProfiles(b) })
	}
}

func cvProfiles(b *testing.B) {
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
		fmt.Printf("%s=%q: only the operators it matches\n", cvOnlyEnv, v)
	}
	var table []cvRow
	start := time.Now()
	for _, prof := range realProfiles {
		ds := loadProfiles(b, prof)
		for _, meas := range ds.Manifest.Measurements {
			ts, err := FromDataset(ds, meas)
			if err != nil {
				b.Fatal(err)
			}
			if keepOps(ts, prof, meas, only); len(ts.Ops) == 0 {
				continue
			}
			rows, folds := outerFolds(ts, k, 1)
			pred, err := nestedFit(ts, rows, folds, k, Options{Seed: 1})
			if err != nil {
				b.Fatalf("%s %s: %v", prof, meas, err)
			}
			full, err := Fit(ts, Options{Seed: 1})
			if err != nil {
				b.Fatalf("%s %s: %v", prof, meas, err)
			}
			var sk, skIn map[string]float64
			if py != "" {
				if sk, err = sklearnOn(b, py, ts, rows, folds, pred); err != nil {
					b.Fatal(err)
				}
				if skIn, err = sklearnInSample(b, py, ts, rows); err != nil {
					b.Fatal(err)
				}
			}
			for i, o := range ts.Ops {
				r := cvRow{profile: prof + " " + meas, key: o.Key, sk: math.NaN(), skIn: math.NaN(), noise: repeatStats(rows[i]).NoiseFloorPct}
				p, _ := full.Predictor(o.Key)
				r.ftkIn = p.Meta().AllRows.MAPE
				if v, ok := skIn[o.Key.String()]; ok {
					r.skIn = v
				}
				scored, sp := scoredRows(rows[i], pred[i])
				r.rows, r.ftk = len(scored), errorStats(sp, scored).MAPE
				if v, ok := sk[o.Key.String()]; ok {
					r.sk = v
				}
				if len(scored) > 0 {
					table = append(table, r)
				}
			}
		}
	}
	printCVTable(os.Stdout, table, py != "")
	fmt.Printf("nested %d-fold CV of %d predictors (ftk side) took %.1fs on %d CPUs\n", k, len(table), time.Since(start).Seconds(), runtime.GOMAXPROCS(0))
}

// scoredRows keeps the rows ftk predicted (a key with one shape has no
// training rows in that shape's fold).
func scoredRows(rows []Row, pred []float64) ([]Row, []float64) {
	var out []Row
	var p []float64
	for j, r := range rows {
		if !math.IsNaN(pred[j]) {
			out, p = append(out, r), append(p, pred[j])
		}
	}
	return out, p
}

// sklearnOn exports the rows ftk scored, with their folds, and runs the
// baseline on them.
func sklearnOn(b *testing.B, py string, ts *TrainingSet, rows [][]Row, folds [][]int, pred [][]float64) (map[string]float64, error) {
	path := filepath.Join(b.TempDir(), "folds.csv")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	for i, o := range ts.Ops {
		var rs []Row
		var fs []int
		for j, r := range rows[i] {
			if !math.IsNaN(pred[i][j]) {
				rs, fs = append(rs, r), append(fs, folds[i][j])
			}
		}
		if err := writeFoldsCSV(w, i == 0, o.Key, rs, fs); err != nil {
			return nil, err
		}
	}
	w.Flush()
	if err := f.Close(); err != nil {
		return nil, err
	}
	return runSklearn(py, path)
}

// sklearnInSample trains the baseline on every row of every key and
// scores it on the same rows.
func sklearnInSample(b *testing.B, py string, ts *TrainingSet, rows [][]Row) (map[string]float64, error) {
	path := filepath.Join(b.TempDir(), "all.csv")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	for i, o := range ts.Ops {
		if err := writeFoldsCSV(w, i == 0, o.Key, rows[i], make([]int, len(rows[i]))); err != nil {
			return nil, err
		}
	}
	w.Flush()
	if err := f.Close(); err != nil {
		return nil, err
	}
	return runSklearn(py, path)
}

func printCVTable(w io.Writer, table []cvRow, haveSk bool) {
	fmt.Fprintf(w, "\nMAPE per predictor on ALL rows of every real profile. CV: 5-fold, folds group a shape's repeats, ftk nested (the whole fit sees only the training folds); IN-SAMPLE: trained on every row, scored on every row (ftk: the bundle's all-rows error). sklearn: RandomForestRegressor(n_estimators=250), anchor features, median target, identical rows and folds. NOISE: spread of repeated measurements\n")
	if !haveSk {
		fmt.Fprintln(w, "sklearn: not installed (apt-get install python3-sklearn)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PROFILE\tOPERATOR\tTP\tCONDITIONS\tROWS\tCV FTK %\tCV SKLEARN %\tFTK-SK\t\tIN-SAMPLE FTK %\tSKLEARN %\tFTK-SK\t\tNOISE %\t")
	var sf, ss, sfi, ssi float64
	var n, worse, worseIn int
	for _, r := range table {
		dIn := r.ftkIn - r.skIn
		markIn := ""
		if dIn > 0.5 {
			markIn, worseIn = "  worse", worseIn+1
		}
		if !math.IsNaN(r.skIn) {
			sfi, ssi = sfi+r.ftkIn, ssi+r.skIn
		}
		diff := r.ftk - r.sk
		mark := ""
		if diff > 0.5 {
			mark, worse = "  worse", worse+1
		}
		if !math.IsNaN(r.sk) {
			sf, ss, n = sf+r.ftk, ss+r.sk, n+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%.2f\t%s\t%s%s\t\t%.2f\t%s\t%s%s\t\t%.2f\t\n", r.profile, r.key.Op, r.key.TP, bundle.Conditions(r.key), r.rows,
			r.ftk, num(r.sk), num(diff), mark, r.ftkIn, num(r.skIn), num(dIn), markIn, r.noise)
	}
	tw.Flush()
	if n > 0 {
		fmt.Fprintf(w, "mean over %d predictors: CV ftk %.2f%%, sklearn %.2f%%, %d predictors worse than sklearn by more than 0.5 points; in-sample ftk %.2f%%, sklearn %.2f%%, %d worse by more than 0.5 points\n",
			n, sf/float64(n), ss/float64(n), worse, sfi/float64(n), ssi/float64(n), worseIn)
	}
	printProfileSummary(w, table)
}

// printProfileSummary prints, per profile and measurement type, how many
// predictors are worse than scikit-learn by more than 0.5 points (CV and
// in-sample) and the worst of each.
func printProfileSummary(w io.Writer, table []cvRow) {
	type sum struct {
		n, worse, worseIn int
		worst, worstIn    cvRow
	}
	var order []string
	by := map[string]*sum{}
	for _, r := range table {
		if math.IsNaN(r.sk) {
			continue
		}
		s, ok := by[r.profile]
		if !ok {
			s = &sum{worst: r, worstIn: r}
			by[r.profile] = s
			order = append(order, r.profile)
		}
		s.n++
		if r.ftk-r.sk > 0.5 {
			s.worse++
		}
		if r.ftkIn-r.skIn > 0.5 {
			s.worseIn++
		}
		if r.ftk-r.sk > s.worst.ftk-s.worst.sk {
			s.worst = r
		}
		if r.ftkIn-r.skIn > s.worstIn.ftkIn-s.worstIn.skIn {
			s.worstIn = r
		}
	}
	fmt.Fprintln(w, "\nper profile: predictors, worse than sklearn by more than 0.5 points (CV; in-sample), and the worst of each (ftk vs sklearn)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tPREDICTORS\tWORSE CV\tWORST CV\tWORSE IN-SAMPLE\tWORST IN-SAMPLE")
	for _, p := range order {
		s := by[p]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s %.2f vs %.2f\t%d\t%s %.2f vs %.2f\n", p, s.n, s.worse, s.worst.key, s.worst.ftk, s.worst.sk,
			s.worseIn, s.worstIn.key, s.worstIn.ftkIn, s.worstIn.skIn)
	}
	tw.Flush()
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// largestMoE is the real MoE profile in testdata with the most rows.
func largestMoE(b *testing.B) string {
	var best string
	var most int
	paths, _ := filepath.Glob(filepath.Join(profiles, "*", "*", "moe.csv"))
	slices.Sort(paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n > most {
			best, most = p, n
		}
	}
	if best == "" {
		b.Fatal("no moe.csv under " + profiles)
	}
	return best
}

// BenchmarkFitMoE times fitting every predictor of the largest real MoE
// profile in testdata, as it is and tiled to the 8,665 CSV rows of a full
// Frontier MoE sweep (the file's rows repeated as further sweeps, each
// sweep's times scaled by a factor within +-10%: repeats are kept, so the
// training rows grow with the file).
func BenchmarkFitMoE(b *testing.B) {
	src := largestMoE(b)
	data, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, rows := range []int{0, 8665} {
		dir := b.TempDir()
		body := data
		if rows > 0 {
			body = tileCSV(b, data, rows)
		}
		if err := os.WriteFile(filepath.Join(dir, "moe.csv"), body, 0o644); err != nil {
			b.Fatal(err)
		}
		ts := ingestDir(b, dir)
		n := 0
		for _, o := range ts.Ops {
			n += len(o.Rows)
		}
		name := fmt.Sprintf("csv_rows=%d", bytes.Count(body, []byte("\n"))-1)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				start, cpu0 := time.Now(), cpuTime()
				bundle, err := Fit(ts, Options{Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				s := time.Since(start).Seconds()
				b.ReportMetric(s, "fit_s")
				b.ReportMetric((cpuTime() - cpu0).Seconds(), "fit_cpu_s")
				fmt.Printf("fit: %s (%s): %d predictors on %d samples in %.1fs wall on %d CPUs\n", src, name, len(bundle.Keys()), n, s, runtime.GOMAXPROCS(0))
			}
		})
	}
}
