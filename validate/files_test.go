package validate

import (
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestWriteFiles(t *testing.T) {
	meas, err := ReadRun("testdata/h100-tp1__conv__r1.csv", Measured)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := ReadRun("testdata/h100-tp1__conv__r1.csv", Simulated)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sim.Requests {
		sim.Requests[i].TTFTMs *= 1.3
	}
	metrics, _ := Metrics()
	rep, err := Compare([]*Run{meas, sim}, metrics)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "report")
	files, err := rep.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "cdf__h100-tp1__conv.png errors.csv errors.md overall.csv unpaired.csv" {
		t.Errorf("files %v", names)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	f, err := os.Open(filepath.Join(dir, "cdf__h100-tp1__conv.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() < 900 || b.Dy() < 250 {
		t.Errorf("plot is %dx%d", b.Dx(), b.Dy())
	}
	// Both curves are drawn: blue (measured) and red (simulated) pixels.
	var blue, red int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			switch {
			case bl>>8 > 150 && r>>8 < 80 && g>>8 < 160:
				blue++
			case r>>8 > 180 && g>>8 < 80 && bl>>8 < 80:
				red++
			}
		}
	}
	if blue < 200 || red < 200 {
		t.Errorf("curve pixels: %d blue (measured), %d red (simulated)", blue, red)
	}
	// Same report, same bytes.
	again := filepath.Join(t.TempDir(), "again")
	if _, err := rep.WriteFiles(again); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		a, _ := os.ReadFile(filepath.Join(dir, n))
		b, _ := os.ReadFile(filepath.Join(again, n))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between two writes of the same report", n)
		}
	}
	if dst := os.Getenv("VALIDATE_PLOT_OUT"); dst != "" {
		data, _ := os.ReadFile(filepath.Join(dir, "cdf__h100-tp1__conv.png"))
		os.WriteFile(dst, data, 0o644)
	}
}
