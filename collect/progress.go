package collect

import (
	"fmt"
	"io"
	"time"

	ftkprogress "github.com/ftk-dev/ftk/progress"
)

// progress reports shapes done: a bar on a terminal, else one line per
// minute.
type progress interface {
	Done(failed bool)
	Close()
}

// newProgress returns a bar when bar is set, else the periodic log.
func newProgress(w io.Writer, total int, bar bool) progress {
	if bar {
		if b := ftkprogress.New(w, "collect", "shapes", total); b != nil {
			return barProgress{b}
		}
	}
	return &logProgress{w: w, total: total, start: time.Now(), last: time.Now(), every: time.Minute}
}

type barProgress struct{ b *ftkprogress.Bar }

func (b barProgress) Done(bool) { b.b.Add(1) }

func (b barProgress) Close() { b.b.Close(false) }

// logProgress prints "collect: 120/4174 shapes (2.9%), 35.1 shapes/s, ETA
// 1m55s, 0 failed" (or "s/shape" below one shape a second) at most once per
// interval.
type logProgress struct {
	w                io.Writer
	total, n, failed int
	start, last      time.Time
	every            time.Duration
}

func (l *logProgress) Done(failed bool) {
	l.n++
	if failed {
		l.failed++
	}
	if now := time.Now(); now.Sub(l.last) >= l.every {
		l.last = now
		l.print(now)
	}
}

func (l *logProgress) print(now time.Time) {
	el := now.Sub(l.start).Seconds()
	rate := float64(l.n) / max(el, 1e-9)
	eta := time.Duration(float64(l.total-l.n)/max(rate, 1e-9)) * time.Second
	speed := fmt.Sprintf("%.1f shapes/s", rate)
	if rate < 1 {
		speed = fmt.Sprintf("%.1f s/shape", 1/max(rate, 1e-9))
	}
	fmt.Fprintf(l.w, "collect: %d/%d shapes (%.1f%%), %s, ETA %s, %d failed\n",
		l.n, l.total, 100*float64(l.n)/float64(max(l.total, 1)), speed, eta.Round(time.Second), l.failed)
}

func (l *logProgress) Close() {}
