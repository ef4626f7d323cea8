package validate

import (
	"bufio"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// cdfMetrics are the per-request latencies drawn in a CDF plot.
var cdfMetrics = []struct {
	title string
	get   func(Request) float64
}{
	{"TTFT (ms)", func(q Request) float64 { return q.TTFTMs }},
	{"TPOT (ms)", func(q Request) float64 { return q.TPOTMs }},
	{"E2E (ms)", func(q Request) float64 { return q.E2EMs }},
}

// PlotName is the file name of the CDF plot of one configuration and
// workload: cdf__CONFIG__WORKLOAD.png, characters other than letters,
// digits, '.', '-' and '_' replaced by '_'.
func PlotName(config, workload string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, s)
	}
	return "cdf" + nameSeparator + clean(config) + nameSeparator + clean(workload) + ".png"
}

// WritePlots draws, for every configuration and workload of the report, the
// CDFs of TTFT, TPOT and E2E over the completed requests of all paired runs,
// measured against simulated, as one PNG in dir. It returns the files
// written.
func (rep *Report) WritePlots(dir string) ([]string, error) {
	var files []string
	for _, g := range groupPairs(rep.Pairs) {
		name := filepath.Join(dir, PlotName(g.id.Config, g.id.Workload))
		err := atomicfile.Write(name, func(w *bufio.Writer) error { return drawCDFs(w, g) })
		if err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

type pairGroup struct {
	id         RunID // configuration and workload
	meas, sims []*Run
}

// groupPairs groups pairs by configuration and workload, in order of first
// appearance, with the distinct runs of each side.
func groupPairs(pairs []Pair) []pairGroup {
	var out []pairGroup
	index := map[[2]string]int{}
	seen := map[*Run]bool{}
	for _, p := range pairs {
		k := [2]string{p.Measured.ID.Config, p.Measured.ID.Workload}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, pairGroup{id: RunID{Config: k[0], Workload: k[1]}})
		}
		if !seen[p.Measured] {
			seen[p.Measured] = true
			out[i].meas = append(out[i].meas, p.Measured)
		}
		if !seen[p.Simulated] {
			seen[p.Simulated] = true
			out[i].sims = append(out[i].sims, p.Simulated)
		}
	}
	return out
}

func drawCDFs(w io.Writer, g pairGroup) error {
	row := make([]*plot.Plot, len(cdfMetrics))
	for i, m := range cdfMetrics {
		p := plot.New()
		p.Title.Text = m.title
		p.X.Label.Text = m.title
		p.Y.Label.Text = "fraction of requests"
		p.Y.Min, p.Y.Max = 0, 1
		p.Add(plotter.NewGrid())
		for _, side := range []struct {
			label string
			runs  []*Run
			color color.Color
			dash  []vg.Length
		}{
			{"measured (" + runsLabel(len(g.meas)) + ")", g.meas, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, nil},
			{"simulated (" + runsLabel(len(g.sims)) + ")", g.sims, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, []vg.Length{vg.Points(4), vg.Points(2)}},
		} {
			xys := cdfPoints(side.runs, m.get)
			if len(xys) == 0 {
				continue
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.StepStyle = plotter.PostStep
			line.Color = side.color
			line.Width = vg.Points(1.5)
			line.Dashes = side.dash
			p.Add(line)
			p.Legend.Add(side.label, line)
		}
		p.Legend.Top = false
		p.Legend.Left = false
		p.Legend.XOffs = -vg.Points(4)
		p.Legend.YOffs = vg.Points(4)
		row[i] = p
	}
	img := vgimg.New(vg.Points(3*300), vg.Points(300))
	dc := draw.New(img)
	top := dc
	top.Max.Y -= vg.Points(30)
	title := fmt.Sprintf("%s / %s: measured vs simulated", g.id.Config, g.id.Workload)
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, top)
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	sty := plot.New().Title.TextStyle
	sty.XAlign = draw.XCenter
	sty.YAlign = draw.YTop
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(8)}, title)
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// cdfPoints returns the empirical CDF of one latency over the completed
// requests of runs, NaN values (TPOT of one-token outputs) left out.
func cdfPoints(runs []*Run, get func(Request) float64) plotter.XYs {
	var v []float64
	for _, r := range runs {
		for _, x := range completedValues(r, get) {
			if x == x {
				v = append(v, x)
			}
		}
	}
	if len(v) == 0 {
		return nil
	}
	sort.Float64s(v)
	xys := make(plotter.XYs, 0, len(v)+1)
	xys = append(xys, plotter.XY{X: v[0], Y: 0})
	for i, x := range v {
		xys = append(xys, plotter.XY{X: x, Y: float64(i+1) / float64(len(v))})
	}
	return xys
}

func runsLabel(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
