// Package progress draws a bar for long work (simulate, validate
// calibrate, collect) when stderr is a terminal, and nothing otherwise: a
// nil *Bar is a valid bar that draws nothing, so callers never test for a
// terminal themselves.
package progress

import (
	"io"
	"os"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// defaultWidth is the line width when the terminal does not report its
// size (a pseudo-terminal nobody sized): the bar is still drawn.
const defaultWidth = 80

// Bar is a progress bar of a known total.
type Bar struct {
	p     *mpb.Progress
	b     *mpb.Bar
	total int64
}

// New returns a bar on w, "label done/total unit [====>   ] rate ETA", when
// w is a terminal; else nil, which draws nothing.
func New(w io.Writer, label, unit string, total int) *Bar {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	width := terminalWidth(f)
	if width <= 0 {
		width = defaultWidth
	}
	return Draw(w, width, label, unit, total)
}

// Draw returns a bar drawn on w, terminal or not, in width columns.
func Draw(w io.Writer, width int, label, unit string, total int) *Bar {
	// mpb sizes lines from the terminal itself and draws nothing when the
	// terminal reports width 0: hide w from it and give the width.
	p := mpb.New(mpb.WithOutput(plainWriter{w}), mpb.WithWidth(width), mpb.WithAutoRefresh())
	b := p.AddBar(int64(total), mpb.BarWidth(min(40, width/2)),
		mpb.PrependDecorators(decor.Name(label+" "), decor.CountersNoUnit("%d/%d "+unit)),
		mpb.AppendDecorators(decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)))
	return &Bar{p: p, b: b, total: int64(total)}
}

// plainWriter hides whether the writer is a terminal.
type plainWriter struct{ io.Writer }

// Set moves the bar to n done.
func (b *Bar) Set(n int) {
	if b != nil {
		b.b.SetCurrent(int64(n))
	}
}

// Add moves the bar n further.
func (b *Bar) Add(n int) {
	if b != nil {
		b.b.IncrBy(n)
	}
}

// Close finishes the bar: full when the work succeeded, else left where it
// stopped. It waits for the last frame, so output after it is not mixed in.
func (b *Bar) Close(ok bool) {
	if b == nil {
		return
	}
	if ok {
		b.b.SetCurrent(b.total)
	} else {
		b.b.Abort(false)
	}
	b.p.Wait()
}
