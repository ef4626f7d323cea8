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
func ImportMooncake(path string, hashBlockTokens int) ([]spec.Request, error) {
	if hashBlockTokens < 1 {
		return nil, fmt.Errorf("mooncake %s: tokens per hash id must be >= 1, got %d", path, hashBlockTokens)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mooncake: %w", err)
	}
	var reqs []spec.Request
	prevS := 0.0
	rest, offset := data, int64(0)
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		start := offset
		offset += int64(len(line)) + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		bad := func(err error) error { return posError(path, data, start, err) }
		var row mooncakeRow
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, jsonPosErrorAt(path, data, start, err)
		}
		r := spec.Request{ID: len(reqs), ArrivalS: math.NaN()}
		switch {
		case row.InputLength == nil || row.OutputLength == nil:
			return nil, bad(errors.New(`want "input_length" and "output_length" (token counts)`))
		case *row.InputLength < 1 || *row.InputLength > maxTokens:
			return nil, bad(fmt.Errorf("input_length %d out of range [1, %d]", *row.InputLength, maxTokens))
		case *row.OutputLength < 1 || *row.OutputLength > maxTokens:
			return nil, bad(fmt.Errorf("output_length %d out of range [1, %d]", *row.OutputLength, maxTokens))
		case len(reqs) > 0 && (row.TimestampMs != nil) == math.IsNaN(reqs[0].ArrivalS):
			return nil, bad(errors.New(`"timestamp" on some lines and not others: give it on every line or none`))
		}
		r.PromptTokens, r.OutputTokens = *row.InputLength, *row.OutputLength
		if t := row.TimestampMs; t != nil {
			s := *t / 1000
			switch {
			case !(s >= 0) || math.IsInf(s, 0):
				return nil, bad(fmt.Errorf("timestamp %g ms must be finite and >= 0", *t))
			case s > MaxArrivalS:
				return nil, bad(fmt.Errorf("timestamp %g ms: %w", *t, arrivalTooLate(s)))
			case s < prevS:
				return nil, bad(fmt.Errorf("timestamp %g ms is before the previous request's %g ms: arrivals must not decrease", *t, prevS*1000))
			}
			r.ArrivalS, prevS = s, s
		}
		if row.HashIDs != nil && len(*row.HashIDs) > 0 {
			r.HashIDs, r.HashBlockTokens = *row.HashIDs, hashBlockTokens
		}
		reqs = append(reqs, r)
	}
	if len(reqs) == 0 {
		return nil, &ParseError{Path: path, Err: errors.New("no requests: want JSON Lines of {\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}")}
	}
	if !math.IsNaN(reqs[0].ArrivalS) {
		relativeArrivals(reqs)
	}
	return reqs, nil
}
