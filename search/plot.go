package search

import (
	"fmt"
	"image/color"
	"io"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawPareto draws, for each SLO target, goodput per GPU against the
// target's latency: each ranked candidate's curve (curves[i], from
// Report.curves: the latency of lower rates), the Pareto front over all of
// them (the best goodput per GPU at or below each latency) and the limit.
func (rep *Report) drawPareto(w io.Writer, curves [][]Probe) error {
	row := make([]*plot.Plot, len(rep.s.SLO))
	for i, t := range rep.s.SLO {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, target %g ms", t.Name(), t.LimitMs)
		p.X.Label.Text = t.Name()
		p.Y.Label.Text = "goodput per GPU (req/s)"
		p.Add(plotter.NewGrid())
		var all plotter.XYs
		type entry struct {
			name string
			th   []plot.Thumbnailer
		}
		legend := make([]entry, min(len(palette), len(rep.Ranked)))
		for j := len(rep.Ranked) - 1; j >= 0; j-- { // the best drawn last, on top
			r := rep.Ranked[j]
			var pts plotter.XYs
			for _, pr := range curves[j] {
				pts = append(pts, plotter.XY{X: pr.Latency[t.Name()], Y: pr.RateRPS / float64(r.GPUs)})
			}
			all = append(all, pts...)
			line, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			c := color.Color(color.Gray{Y: 0xb0})
			if j < len(palette) {
				c = palette[j]
				legend[j] = entry{fmt.Sprintf("%d. %s %s s%d b%d", r.Rank, r.Candidate.Describe(), r.Candidate.Device, r.Candidate.MaxNumSeqs, r.Candidate.MaxNumBatchedTokens), []plot.Thumbnailer{line, sc}}
			}
			line.Color, sc.Color = c, c
			sc.Radius = vg.Points(2)
			p.Add(line, sc)
		}
		for _, e := range legend {
			p.Legend.Add(e.name, e.th...)
		}
		if len(all) > 0 {
			front, err := plotter.NewLine(paretoFront(all))
			if err != nil {
				return err
			}
			front.StepStyle = plotter.PostStep
			front.Color = color.Black
			front.Width = vg.Points(1.5)
			front.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
			p.Add(front)
			p.Legend.Add("best at or below this latency", front)
		}
		limit, err := plotter.NewLine(plotter.XYs{{X: t.LimitMs, Y: 0}, {X: t.LimitMs, Y: maxY(all) * 1.05}})
		if err != nil {
			return err
		}
		limit.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		limit.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
		p.Add(limit)
		p.Legend.Add("target", limit)
		p.X.Min, p.Y.Min = 0, 0
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.YOffs = vg.Points(4)
		row[i] = p
	}
	img := vgimg.New(vg.Points(float64(len(row))*420), vg.Points(360))
	dc := draw.New(img)
	top := dc
	top.Max.Y -= vg.Points(30)
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, top)
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	sty := plot.New().Title.TextStyle
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	title := fmt.Sprintf("%s: goodput per GPU against latency (SLO %s)", rep.s.Space.Model.Name, rep.s.SLO)
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(8)}, title)
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// palette colours the three best candidates; the others are grey.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// paretoFront returns the best y at or below each x, as steps.
func paretoFront(pts plotter.XYs) plotter.XYs {
	s := append(plotter.XYs(nil), pts...)
	sort.Slice(s, func(i, j int) bool { return s[i].X < s[j].X || s[i].X == s[j].X && s[i].Y > s[j].Y })
	var out plotter.XYs
	best := -1.0
	for _, p := range s {
		if p.Y > best {
			best = p.Y
			out = append(out, p)
		}
	}
	return out
}

func maxY(pts plotter.XYs) float64 {
	m := 1e-9
	for _, p := range pts {
		m = max(m, p.Y)
	}
	return m
}
