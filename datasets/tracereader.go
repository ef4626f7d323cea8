package datasets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ftk-dev/ftk/spec"
)

// TraceReader reads a trace CSV (the format ReadTrace documents) one
// request at a time, holding one line, so a trace of any length replays
// in the memory of the requests in flight. Every row is checked as it is
// read, with the same errors as ReadTrace: a *ParseError naming the file,
// line and column.
//
// Arrival times must not decrease down the file. A trace is replayed in
// file order, so a row whose time is before the previous row's is refused
// (naming both lines, with a command that sorts the file) rather than
// reordered: sorting needs the whole file, and a bounded reorder window
// would replay a trace whose disorder exceeds the window in an order the
// file does not say.
//
// A TraceReader is not safe for concurrent use.
type TraceReader struct {
	lineReader
	closer io.Closer // the file OpenTrace opened; nil otherwise
	cols   traceColumns
	fields fieldSplitter
	rows   int // requests returned
	prevS  float64
	prevLn int
	t0     float64 // first arrival of a trace on an absolute clock; 0 otherwise
	info   TraceInfo
	done   bool
}

// traceBufBytes is the read buffer of a TraceReader: lines up to this
// long are parsed in place, longer ones are copied.
const traceBufBytes = 64 << 10

// OpenTrace opens the trace CSV at path and reads its header; the
// requests follow from Next. The file is closed when Next reports the end
// (or by Close).
func OpenTrace(path string) (*TraceReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	t, err := newTraceReader(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	t.closer = f
	return t, nil
}

// newTraceReader reads the header of the trace CSV in r (named path in
// errors).
func newTraceReader(path string, r io.Reader) (*TraceReader, error) {
	t := &TraceReader{lineReader: newLineReader(path, r)}
	if bom, _ := t.r.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		t.r.Discard(3)
	}
	for {
		line, ok := t.readLine()
		if !ok {
			if t.err == nil {
				t.err = &ParseError{Path: path, Err: errors.New("empty file: no header line")}
			}
			return nil, t.err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := t.header(line); err != nil {
			return nil, err
		}
		return t, nil
	}
}

// header parses the header line (line t.lineNo).
func (t *TraceReader) header(line []byte) error {
	cols, err := parseHeader(t.path, line)
	if err != nil {
		if pe, ok := err.(*ParseError); ok {
			pe.Line = t.lineNo
		}
		return err
	}
	t.cols = cols
	return nil
}

// noRows is the error of a trace with a header and no requests.
func (t *TraceReader) noRows() error {
	return &ParseError{Path: t.path, Line: t.lineNo, Err: errors.New("no requests after the header")}
}

// HasArrivals reports whether the trace has an arrived_at column, so that
// every request carries an arrival time (otherwise every ArrivalS is NaN).
func (t *TraceReader) HasArrivals() bool { return t.cols.arrival >= 0 }

// Info returns what the rows read so far say beyond their requests.
func (t *TraceReader) Info() TraceInfo { return t.info }

// Rows returns the number of requests returned so far.
func (t *TraceReader) Rows() int { return t.rows }

// Err returns the error that ended the requests early, or nil when the
// file was read to its end.
func (t *TraceReader) Err() error { return t.err }

// Close closes the file of OpenTrace; it is safe to call more than once.
func (t *TraceReader) Close() error {
	t.done = true
	if t.closer == nil {
		return nil
	}
	c := t.closer
	t.closer = nil
	return c.Close()
}

// Next returns the next request, or false at the end of the file or at
// the first bad row (then Err says why). Request IDs are the 0-based row
// positions. A trace whose first arrival is on an absolute clock (epoch
// seconds) has its times made relative to that arrival, as ReadTrace
// does.
func (t *TraceReader) Next() (spec.Request, bool) {
	for !t.done {
		line, ok := t.readLine()
		if !ok {
			if t.err == nil && t.rows == 0 {
				t.err = t.noRows()
			}
			t.Close()
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r spec.Request
		if err := t.parseRow(line, &r); err != nil {
			t.err = err
			t.Close()
			break
		}
		return r, true
	}
	return spec.Request{}, false
}

// lineReader reads a file one line at a time: lines up to its buffer's
// size in place, longer ones copied.
type lineReader struct {
	path   string
	r      *bufio.Reader
	long   []byte // a line longer than r's buffer
	lineNo int    // lines read, blank ones included
	err    error  // a read error
}

func newLineReader(path string, r io.Reader) lineReader {
	return lineReader{path: path, r: bufio.NewReaderSize(r, traceBufBytes)}
}

// readLine returns the next line without its line ending (\n or \r\n),
// or false at the end of the file or on a read error (then err says).
func (l *lineReader) readLine() ([]byte, bool) {
	line, err := l.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.r.ReadSlice('\n')
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if err != nil && err != io.EOF {
		l.err = fmt.Errorf("read %s: %w", l.path, err)
		return nil, false
	}
	if len(line) == 0 {
		return nil, false
	}
	l.lineNo++
	if n := len(line); line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, true
}

// parseRow parses one non-blank line into r, which must be zero. It fills
// r in place: plain stores of pointer-free fields need no GC write
// barriers, which ReadTrace's rows in one slice would otherwise pay.
func (t *TraceReader) parseRow(line []byte, r *spec.Request) error {
	cols := &t.cols
	nf, err := t.fields.split(line)
	if err != nil {
		return &ParseError{Path: t.path, Line: t.lineNo, Err: err}
	}
	if nf != cols.n {
		return &ParseError{Path: t.path, Line: t.lineNo, Err: fmt.Errorf("has %d fields, the header has %d", nf, cols.n)}
	}
	bad := func(col int, err error) error {
		return &ParseError{Path: t.path, Line: t.lineNo, Column: col + 1, Name: cols.names[col], Err: err}
	}
	if r.PromptTokens, err = parseTokens(t.fields.field(cols.prompt)); err != nil {
		return bad(cols.prompt, err)
	}
	if r.OutputTokens, err = parseTokens(t.fields.field(cols.output)); err != nil {
		return bad(cols.output, err)
	}
	r.ArrivalS = math.NaN()
	if cols.arrival >= 0 {
		arrival, err := parseArrival(t.fields.field(cols.arrival))
		if err != nil {
			return bad(cols.arrival, err)
		}
		if t.rows > 0 && arrival < t.prevS {
			return bad(cols.arrival, t.unsorted(arrival))
		}
		// A trace that starts on an absolute clock (epoch seconds) is
		// stored relative to its first arrival, so the simulation's clock
		// runs near zero, where a time in seconds keeps its nanoseconds,
		// instead of near 1.7e9 s, where it keeps a quarter of a
		// microsecond and sums of step times drift. The differences are
		// rounded to the microsecond, a trace's precision, which undoes
		// the rounding of the absolute times (their spacing is below half
		// a microsecond up to 2^31 s): the run is that of the trace
		// written from zero.
		if t.rows == 0 && arrival >= absoluteClockS {
			t.t0 = arrival
		}
		t.prevS, t.prevLn = arrival, t.lineNo
		r.ArrivalS = arrival
		if t.t0 != 0 {
			r.ArrivalS = roundMicro(arrival - t.t0)
		}
	}
	if cols.tokens >= 0 && string(bytes.TrimSpace(t.fields.field(cols.tokens))) == "estimated" {
		t.info.TokensEstimated = true
	}
	if col, err := cols.content.parse(r, &t.fields); err != nil {
		return bad(col, err)
	}
	r.ID = t.rows
	t.rows++
	return nil
}

// unsorted is the error of an arrival before the previous row's.
func (t *TraceReader) unsorted(arrivalS float64) error {
	k := t.cols.arrival + 1
	return fmt.Errorf("%g is before the previous request's %g (line %d): arrivals must not decrease, as the trace is replayed in file order; "+
		"sort the rows by this column first, e.g. (head -n 1 %s; tail -n +2 %s | sort -t, -k%d,%dg -s) > sorted.csv",
		arrivalS, t.prevS, t.prevLn, t.path, t.path, k, k)
}

// traceMeta is what a full read of a trace file found: enough to size and
// time a replay without holding its rows.
type traceMeta struct {
	rows          int
	hasArrivals   bool
	firstS, lastS float64 // arrival times (relative, as Next returns them) of the first and last rows
	info          TraceInfo
}

// scanTrace reads every row of the trace at path, checking each, and
// returns what it found; it holds one row at a time.
func scanTrace(path string) (traceMeta, error) {
	t, err := OpenTrace(path)
	if err != nil {
		return traceMeta{}, err
	}
	defer t.Close()
	m := traceMeta{hasArrivals: t.HasArrivals()}
	for r, ok := t.Next(); ok; r, ok = t.Next() {
		if m.rows == 0 {
			m.firstS = r.ArrivalS
		}
		m.lastS = r.ArrivalS
		m.rows++
	}
	if err := t.Err(); err != nil {
		return traceMeta{}, err
	}
	m.info = t.Info()
	return m, nil
}

// traceArrivalAt returns the arrival time of row i (0-based) of the trace
// at path, as Next returns it.
func traceArrivalAt(path string, i int) (float64, error) {
	t, err := OpenTrace(path)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	for r, ok := t.Next(); ok; r, ok = t.Next() {
		if r.ID == i {
			return r.ArrivalS, nil
		}
	}
	if err := t.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("trace %s: has %d rows, no row %d", path, t.Rows(), i)
}
