package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Trace CSV column names. The first three are those of the real traces in
// testdata/traces; the rest are optional.
const (
	ColArrivedAt   = "arrived_at"         // arrival time, seconds (optional)
	ColPrompt      = "num_prefill_tokens" // prompt tokens (required)
	ColOutput      = "num_decode_tokens"  // output tokens (required)
	ColTokenCounts = "token_counts"       // "estimated" when counts are not from a tokenizer (optional)
)

// maxTokens bounds a token count so that it fits an int32 everywhere.
const maxTokens = math.MaxInt32

// TraceInfo is what a trace file says beyond its requests.
type TraceInfo struct {
	// TokensEstimated is true when the token counts are estimates (for
	// example a ShareGPT import without a tokenizer), recorded as
	// token_counts=estimated in the file.
	TokensEstimated bool
}

// ParseError is a bad value or layout in an input file. Line is 1-based.
// For CSV files Column is the 1-based field number and Name the column's
// header; for JSON files Column is the 1-based byte column within the line.
// Column is 0 when the error concerns a whole line or the whole file.
type ParseError struct {
	Path   string
	Line   int
	Column int
	Name   string
	Err    error
}

// Error formats the error as path:line:column: name: message.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Name != "" {
		b.WriteString(e.Name)
		b.WriteString(" ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ReadTrace reads a trace CSV file: a header line, then one request per
// line. Columns are matched by header name, in any order:
// num_prefill_tokens and num_decode_tokens are required (integers >= 1);
// arrived_at (seconds, finite, >= 0, non-decreasing) and the shared-content
// columns (see contentColumns: session_id, turn, prefix_hash,
// prefix_tokens, hash_ids, hash_block_tokens) are optional; any other
// column (num_total_tokens, pd_ratio, ...) is ignored. CRLF line endings, a UTF-8 byte order mark, blank lines
// and RFC 4180 quoted fields (within one line) are accepted.
//
// A trace without an arrived_at column has ArrivalS = NaN in every request;
// a trace with one has a finite ArrivalS in every request: use HasArrivals
// to tell. Request IDs are the 0-based positions in the file. Every error is
// a *ParseError naming the file, line and column.
func ReadTrace(path string) ([]spec.Request, error) {
	reqs, _, err := ReadTraceInfo(path)
	return reqs, err
}

// ReadTraceInfo is ReadTrace that also returns what the file says beyond
// its requests.
func ReadTraceInfo(path string) ([]spec.Request, TraceInfo, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, TraceInfo{}, fmt.Errorf("read trace: %w", err)
	}
	return parseTrace(path, data)
}

// HasArrivals reports whether the requests carry arrival times. ReadTrace
// and Generate give either every request an arrival time or none, so the
// first request decides; an empty slice has none.
func HasArrivals(reqs []spec.Request) bool {
	return len(reqs) > 0 && !math.IsNaN(reqs[0].ArrivalS)
}

// traceColumns are the field positions of the known columns; -1 when absent.
type traceColumns struct {
	arrival, prompt, output, tokens int
	content                         contentColumns
	names                           []string
	n                               int
}

func parseHeader(path string, line []byte) (traceColumns, error) {
	c := traceColumns{arrival: -1, prompt: -1, output: -1, tokens: -1, content: noContentColumns()}
	fields, err := splitFields(line, nil)
	if err != nil {
		return c, &ParseError{Path: path, Line: 1, Err: err}
	}
	seen := make(map[string]int, len(fields))
	for i, f := range fields {
		name := strings.TrimSpace(string(f))
		if j, dup := seen[name]; dup && name != "" {
			return c, &ParseError{Path: path, Line: 1, Column: i + 1, Err: fmt.Errorf("duplicate column %q (also column %d)", name, j+1)}
		}
		seen[name] = i
		c.names = append(c.names, name)
		switch name {
		case ColArrivedAt:
			c.arrival = i
		case ColPrompt:
			c.prompt = i
		case ColOutput:
			c.output = i
		case ColTokenCounts:
			c.tokens = i
		default:
			c.content.match(name, i)
		}
	}
	c.n = len(fields)
	for _, req := range []struct {
		name string
		idx  int
	}{{ColPrompt, c.prompt}, {ColOutput, c.output}} {
		if req.idx < 0 {
			return c, &ParseError{Path: path, Line: 1, Err: fmt.Errorf("missing required column %s (header has: %s)", req.name, strings.Join(c.names, ","))}
		}
	}
	return c, nil
}

// parseTrace reads the trace CSV in data (named path in errors) whole,
// row by row as TraceReader does, into one slice.
func parseTrace(path string, data []byte) ([]spec.Request, TraceInfo, error) {
	t := &TraceReader{lineReader: lineReader{path: path}}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var reqs []spec.Request
	haveHeader := false
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		t.lineNo++
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !haveHeader {
			if err := t.header(line); err != nil {
				return nil, t.info, err
			}
			haveHeader = true
			reqs = make([]spec.Request, 0, bytes.Count(data, []byte{'\n'})+1)
			continue
		}
		if len(reqs) == cap(reqs) {
			reqs = append(reqs, spec.Request{})[:len(reqs)]
		}
		reqs = reqs[:len(reqs)+1]
		if err := t.parseRow(line, &reqs[len(reqs)-1]); err != nil {
			return nil, t.info, err
		}
	}
	if !haveHeader {
		return nil, t.info, &ParseError{Path: path, Err: errors.New("empty file: no header line")}
	}
	if len(reqs) == 0 {
		return nil, t.info, t.noRows()
	}
	return reqs, t.info, nil
}

// parseTokens parses a token count: a decimal integer >= 1 (an integral
// value written with a zero fraction, such as "374.0", is accepted).
func parseTokens(b []byte) (int, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, errors.New("is empty")
	}
	s := b
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	if i := bytes.IndexByte(s, '.'); i >= 0 {
		for _, c := range s[i+1:] {
			if c != '0' {
				return 0, fmt.Errorf("must be an integer, got %q", b)
			}
		}
		s = s[:i]
	}
	if len(s) == 0 {
		return 0, fmt.Errorf("must be an integer, got %q", b)
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("must be an integer, got %q", b)
		}
		if n > (maxTokens-int(c-'0'))/10 {
			return 0, fmt.Errorf("%q is too large (at most %d)", b, maxTokens)
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	if n < 1 {
		return 0, fmt.Errorf("must be >= 1, got %d", n)
	}
	return n, nil
}

// parseArrival parses an arrival time in seconds: finite and >= 0.
func parseArrival(b []byte) (float64, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, errors.New("is empty (the column is optional, but when present every request needs a time)")
	}
	v, ok := parseDecimalFast(b)
	if !ok {
		var err error
		if v, err = strconv.ParseFloat(string(b), 64); err != nil {
			return 0, fmt.Errorf("must be a number of seconds, got %q", b)
		}
	}
	switch {
	case math.IsNaN(v):
		return 0, errors.New("is NaN")
	case math.IsInf(v, 0):
		return 0, fmt.Errorf("must be finite, got %q", b)
	case v < 0:
		return 0, fmt.Errorf("must be >= 0, got %g", v)
	case v > MaxArrivalS:
		return 0, arrivalTooLate(v)
	}
	return v, nil
}

// absoluteClockS is where arrival times read as an absolute clock (11.6
// days and later: epoch seconds) rather than seconds since a trace's start.
const absoluteClockS = 1e6

// arrivalTooLate is the error of an arrival time past MaxArrivalS.
func arrivalTooLate(v float64) error {
	return fmt.Errorf("%g s is past %g s (136 years), where a time in seconds keeps less than a microsecond and latencies would round to nothing: "+
		"the column is seconds; epoch milliseconds or microseconds? divide by 1000 or 1000000", v, float64(MaxArrivalS))
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimalFast parses a plain decimal (digits, optionally one '.') of
// at most 15 significant digits: the mantissa and the power of ten are
// exact in float64, so one division is correctly rounded and the result
// equals strconv.ParseFloat's. It reports false for anything else.
func parseDecimalFast(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var mant uint64
	digits, frac := 0, -1
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
		case c == '.' && frac < 0:
			frac = i
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	if frac < 0 {
		return float64(mant), true
	}
	return float64(mant) / pow10[len(b)-frac-1], true
}

// fieldSplitter splits CSV lines into fields, reusing its buffers. A line
// without quotes is split into offsets (pointer-free: no GC write
// barriers); a line with quotes goes through splitFields.
type fieldSplitter struct {
	line   []byte
	bounds []int    // start and end of each field of line
	quoted [][]byte // the fields of a line with quotes, else nil
}

// split splits line and returns its number of fields.
func (f *fieldSplitter) split(line []byte) (int, error) {
	f.line, f.quoted, f.bounds = line, nil, f.bounds[:0]
	if bytes.IndexByte(line, '"') >= 0 {
		q, err := splitFields(line, nil)
		f.quoted = q
		return len(q), err
	}
	start := 0
	for {
		i := bytes.IndexByte(line[start:], ',')
		if i < 0 {
			f.bounds = append(f.bounds, start, len(line))
			return len(f.bounds) / 2, nil
		}
		f.bounds = append(f.bounds, start, start+i)
		start += i + 1
	}
}

// field returns field i of the last line split.
func (f *fieldSplitter) field(i int) []byte {
	if f.quoted != nil {
		return f.quoted[i]
	}
	return f.line[f.bounds[2*i]:f.bounds[2*i+1]]
}

// splitFields appends the comma-separated fields of one CSV line to dst.
// Unquoted fields are subslices of line; quoted fields (RFC 4180, "" for a
// quote) may not span lines.
func splitFields(line []byte, dst [][]byte) ([][]byte, error) {
	if bytes.IndexByte(line, '"') < 0 {
		for {
			i := bytes.IndexByte(line, ',')
			if i < 0 {
				return append(dst, line), nil
			}
			dst = append(dst, line[:i])
			line = line[i+1:]
		}
	}
	for {
		if len(line) > 0 && line[0] == '"' {
			var f []byte
			i := 1
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					return dst, errors.New("unterminated quoted field (quoted fields may not span lines)")
				}
				f = append(f, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' {
					f = append(f, '"')
					i++
					continue
				}
				break
			}
			dst = append(dst, f)
			line = line[i:]
			if len(line) == 0 {
				return dst, nil
			}
			if line[0] != ',' {
				return dst, errors.New("unexpected text after a closing quote")
			}
			line = line[1:]
			continue
		}
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			if bytes.IndexByte(line, '"') >= 0 {
				return dst, errors.New(`bare " in an unquoted field`)
			}
			return append(dst, line), nil
		}
		if bytes.IndexByte(line[:i], '"') >= 0 {
			return dst, errors.New(`bare " in an unquoted field`)
		}
		dst = append(dst, line[:i])
		line = line[i+1:]
	}
}
