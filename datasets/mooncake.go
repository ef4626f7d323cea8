package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/ftk-dev/ftk/spec"
)

// mooncakeRow is one line of a Mooncake trace. Pointers tell a missing
// field from a zero.
type mooncakeRow struct {
	TimestampMs  *float64  `json:"timestamp"`
	InputLength  *int      `json:"input_length"`
	OutputLength *int      `json:"output_length"`
	HashIDs      *[]uint64 `json:"hash_ids"`
}

// ImportMooncake reads a trace in the format of the public Mooncake traces
// (kvcache-ai/Mooncake, FAST'25 "mooncake_trace.jsonl"; also what
// ExportMooncake writes and AIPerf replays): JSON Lines of
//
//	{"timestamp": MS, "input_length": N, "output_length": M, "hash_ids": [ID, ...]}
//
// timestamp is the arrival in milliseconds from the trace start (optional,
// but on every line or none; non-decreasing); input_length and
// output_length are token counts >= 1; hash_ids (optional) name the
// prompt's content in runs of hashBlockTokens tokens (512 in the public
// traces: MooncakeHashBlockTokens), one id per run, the last run possibly
// partial: requests with equal leading ids share those tokens. Unknown
// fields are ignored; blank lines are skipped. Request IDs are the 0-based
// request positions. Errors are *ParseError with the line and column.
// The file is read one line at a time; ImportMooncake holds the requests,
// ConvertMooncake writes them as it reads them.
func ImportMooncake(path string, hashBlockTokens int) ([]spec.Request, error) {
	m, err := openMooncake(path, hashBlockTokens)
	if err != nil {
		return nil, err
	}
	defer m.f.Close()
	var reqs []spec.Request
	for r, ok := m.next(); ok; r, ok = m.next() {
		reqs = append(reqs, r)
	}
	if m.err != nil {
		return nil, m.err
	}
	return reqs, nil
}

// ConvertMooncake writes the Mooncake trace at in (ImportMooncake) as the
// trace CSV out (WriteTrace's bytes for ImportMooncake's requests), holding
// one line at a time: in is read twice, to check it and to write it. It
// returns the requests and hash ids written.
func ConvertMooncake(in, out string, hashBlockTokens int) (requests, hashIDs int, err error) {
	if _, err := openMooncake(in, hashBlockTokens); err != nil {
		return 0, 0, err
	}
	var readErr error
	rows := func(yield func(spec.Request) bool) {
		hashIDs = 0
		m, err := openMooncake(in, hashBlockTokens)
		if err != nil {
			readErr = err
			return
		}
		defer m.f.Close()
		for r, ok := m.next(); ok; r, ok = m.next() {
			hashIDs += len(r.HashIDs)
			if !yield(r) {
				return
			}
		}
		readErr = m.err
	}
	requests, err = writeTrace(out, rows, func() error { return readErr }, TraceInfo{})
	return requests, hashIDs, err
}

// mooncakeReader reads the requests of a Mooncake trace one line at a
// time.
type mooncakeReader struct {
	lineReader
	f               *os.File
	hashBlockTokens int
	rows            int
	timed           bool    // the first request has a timestamp
	prevS, t0       float64 // the last arrival; the first, when on an absolute clock (else 0)
}

func openMooncake(path string, hashBlockTokens int) (*mooncakeReader, error) {
	if hashBlockTokens < 1 {
		return nil, fmt.Errorf("mooncake %s: tokens per hash id must be >= 1, got %d", path, hashBlockTokens)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mooncake: %w", err)
	}
	return &mooncakeReader{lineReader: newLineReader(path, f), f: f, hashBlockTokens: hashBlockTokens}, nil
}

// next returns the next request, or false at the end or at the first bad
// line (then err says why).
func (m *mooncakeReader) next() (spec.Request, bool) {
	for m.err == nil {
		line, ok := m.readLine()
		if !ok {
			if m.err == nil && m.rows == 0 {
				m.err = &ParseError{Path: m.path, Err: errors.New("no requests: want JSON Lines of {\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}")}
			}
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := m.parse(line)
		if err != nil {
			if pe, ok := err.(*ParseError); ok {
				pe.Line = m.lineNo
			}
			m.err = err
			break
		}
		return r, true
	}
	return spec.Request{}, false
}

// parse parses one line; a *ParseError it returns has the line's column
// and line 1.
func (m *mooncakeReader) parse(line []byte) (spec.Request, error) {
	bad := func(err error) error { return &ParseError{Path: m.path, Line: 1, Column: 1, Err: err} }
	var row mooncakeRow
	if err := json.Unmarshal(line, &row); err != nil {
		return spec.Request{}, jsonPosErrorAt(m.path, line, 0, err)
	}
	r := spec.Request{ID: m.rows, ArrivalS: math.NaN()}
	switch {
	case row.InputLength == nil || row.OutputLength == nil:
		return r, bad(errors.New(`want "input_length" and "output_length" (token counts)`))
	case *row.InputLength < 1 || *row.InputLength > maxTokens:
		return r, bad(fmt.Errorf("input_length %d out of range [1, %d]", *row.InputLength, maxTokens))
	case *row.OutputLength < 1 || *row.OutputLength > maxTokens:
		return r, bad(fmt.Errorf("output_length %d out of range [1, %d]", *row.OutputLength, maxTokens))
	case m.rows > 0 && (row.TimestampMs != nil) != m.timed:
		return r, bad(errors.New(`"timestamp" on some lines and not others: give it on every line or none`))
	}
	r.PromptTokens, r.OutputTokens = *row.InputLength, *row.OutputLength
	if t := row.TimestampMs; t != nil {
		s := *t / 1000
		switch {
		case !(s >= 0) || math.IsInf(s, 0):
			return r, bad(fmt.Errorf("timestamp %g ms must be finite and >= 0", *t))
		case s > MaxArrivalS:
			return r, bad(fmt.Errorf("timestamp %g ms: %w", *t, arrivalTooLate(s)))
		case m.rows > 0 && s < m.prevS:
			return r, bad(fmt.Errorf("timestamp %g ms is before the previous request's %g ms: arrivals must not decrease (sort the lines by timestamp first, e.g. jq -c -s 'sort_by(.timestamp)[]' %s > sorted.jsonl)", *t, m.prevS*1000, m.path))
		}
		if m.rows == 0 && s >= absoluteClockS {
			m.t0 = s
		}
		r.ArrivalS, m.prevS = s, s
		if m.t0 != 0 {
			r.ArrivalS = roundMicro(s - m.t0) // relative to the first, as TraceReader does
		}
	}
	if m.rows == 0 {
		m.timed = row.TimestampMs != nil
	}
	if row.HashIDs != nil && len(*row.HashIDs) > 0 {
		r.HashIDs, r.HashBlockTokens = *row.HashIDs, m.hashBlockTokens
	}
	m.rows++
	return r, nil
}
