package simulate

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/publicrun"
)

const kernelTablesDoc = "../docs/validation-kernels.md"

// The public H100 runs of publicrun/runs replayed twice, priced by the
// built-in device model and by AIConfigurator's H100 kernel tables of vLLM
// 0.14.0 (testdata's copy; the ops the tables lack by the device model),
// each run with its record's settings: the side-by-side table of
// docs/validation-kernels.md, which this test checks (FTK_UPDATE_DOCS=1,
// make validation, writes it). The tables are a later stack than most of
// these runs (vLLM 0.6-0.10): the comparison says how far kernels
// measured on vLLM 0.14 move each run, not which stack is right.
func TestPublicRunsFromKernelTables(t *testing.T) {
	var b strings.Builder
	b.WriteString("\n| run | metric | measured | device model | error | kernel tables | error |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	var sumRoof, sumTab float64
	n := 0
	for _, r := range publicRuns(t) {
		if r.Setup.Device != "h100" {
			continue
		}
		roof := replayMetrics(t, runConfig(r), r)
		cfg := runConfig(r)
		cfg.Bundle, cfg.VLLMVersion = sharedDir+"/aiconfigurator/h100_sxm", "0.14.0"
		tab := replayMetrics(t, cfg, r)
		name := r.Name
		for _, m := range publicrun.Metrics {
			want, ok := r.Measured[m]
			if !ok {
				continue
			}
			a, c := roof[m], tab[m]
			ea, ec := publicrun.ErrorPct(a, want), publicrun.ErrorPct(c, want)
			fmt.Fprintf(&b, "| %s | %s | %.4g | %.4g | %+.1f%% | %.4g | %+.1f%% |\n", name, publicrun.MetricLabels[m], want, a, ea, c, ec)
			name = ""
			sumRoof, sumTab, n = sumRoof+math.Abs(ea), sumTab+math.Abs(ec), n+1
		}
	}
	if n == 0 {
		t.Fatal("no public H100 run")
	}
	// The B200 runs need the full B200 database, outside the repository:
	// logged, not written to the page.
	if root := os.Getenv("FTK_AICONFIGURATOR"); root != "" {
		for _, r := range publicRuns(t) {
			if r.Setup.Device != "b200" {
				continue
			}
			roof := replayMetrics(t, runConfig(r), r)
			cfg := runConfig(r)
			cfg.Bundle, cfg.VLLMVersion = root+"/b200_sxm", "0.19.0"
			tab := replayMetrics(t, cfg, r)
			for _, m := range publicrun.Metrics {
				if want, ok := r.Measured[m]; ok {
					a, c := roof[m], tab[m]
					t.Logf("%s %s: measured %.4g, device model %.4g (%+.1f%%), B200 kernel tables of vLLM 0.19.0 %.4g (%+.1f%%)",
						r.Name, m, want, a, publicrun.ErrorPct(a, want), c, publicrun.ErrorPct(c, want))
				}
			}
		}
	}
	fmt.Fprintf(&b, "\nMean absolute error over these %d figures: device model %.1f%%, kernel tables %.1f%%.\n\n", n, sumRoof/float64(n), sumTab/float64(n))
	raw, err := os.ReadFile(kernelTablesDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := "<!-- e2e:begin -->", "<!-- e2e:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the e2e markers", kernelTablesDoc)
	}
	want := doc[:i+len(begin)] + b.String() + doc[j:]
	if os.Getenv("FTK_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(kernelTablesDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Errorf("%s is stale: run make validation", kernelTablesDoc)
	}
}
