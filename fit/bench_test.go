package fit

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// The A800 benchmarks: the real full-size Qwen3-30B-A3B profiles.
const a800 = "frontier-a800-qwen3-30b-a3b"

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
