package validate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Columns of a per-request CSV. Required: arrival_s (seconds from the run
// start), prompt_tokens, output_tokens, ttft_ms and e2e_ms. Optional:
// request_id (default: the row's position), tpot_ms (default: spec's
// (E2E-TTFT)/(output tokens-1)) and status (completed, rejected or failed;
// default completed). Other columns are ignored, so an ftk simulate
// per-request CSV reads as it stands. Latency cells of rows that did not
// complete may be empty.
var (
	requiredCSVColumns = []string{"arrival_s", "prompt_tokens", "output_tokens", "ttft_ms", "e2e_ms"}
	optionalCSVColumns = []string{"request_id", "tpot_ms", "status"}
)

// ReadRequestsCSV reads a per-request CSV (columns above) as a run of the
// given side, with a zero RunID (the caller assigns it). The makespan is the
// first arrival to the last completion.
func ReadRequestsCSV(path string, side Side) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run, err := readRequestsCSV(f, path)
	if err != nil {
		return nil, err
	}
	run.Side = side
	return run, nil
}

func readRequestsCSV(r io.Reader, path string) (*Run, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file (no header)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range requiredCSVColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s line 1: no %s column (required: %s; optional: %s)", path, c,
				strings.Join(requiredCSVColumns, ", "), strings.Join(optionalCSVColumns, ", "))
		}
	}
	run := &Run{Source: path}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		q, err := parseCSVRequest(rec, col, len(run.Requests))
		if err != nil {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("%s line %d %w", path, line, err)
		}
		run.Requests = append(run.Requests, q)
	}
	run.MakespanS = makespanS(run.Requests)
	return run, nil
}

// parseCSVRequest parses one row; errors start with "column N (name): ".
func parseCSVRequest(rec []string, col map[string]int, row int) (Request, error) {
	cell := func(name string) (string, int, bool) {
		i, ok := col[name]
		if !ok || i >= len(rec) {
			return "", i, false
		}
		return strings.TrimSpace(rec[i]), i, true
	}
	fail := func(name string, format string, a ...any) error {
		return fmt.Errorf("column %d (%s): %s", col[name]+1, name, fmt.Sprintf(format, a...))
	}
	integer := func(name string) (int, error) {
		s, _, _ := cell(name)
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, fail(name, "%q is not a non-negative integer", s)
		}
		return v, nil
	}
	q := Request{ID: row, Completed: true, TPOTMs: math.NaN()}
	if s, _, ok := cell("status"); ok {
		switch strings.ToLower(s) {
		case "", "completed", "ok", "success":
		case "rejected", "failed", "error", "aborted":
			q.Completed = false
		default:
			return q, fail("status", "%q: want completed, rejected or failed", s)
		}
	}
	var err error
	if s, _, ok := cell("request_id"); ok && s != "" {
		if q.ID, err = strconv.Atoi(s); err != nil {
			return q, fail("request_id", "%q is not an integer", s)
		}
	}
	if q.PromptTokens, err = integer("prompt_tokens"); err != nil {
		return q, err
	}
	if q.OutputTokens, err = integer("output_tokens"); err != nil {
		return q, err
	}
	float := func(name string, required bool) (float64, error) {
		s, _, _ := cell(name)
		if s == "" && !required {
			return math.NaN(), nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fail(name, "%q is not a number", s)
		}
		if required && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
			return 0, fail(name, "%s: want a finite, non-negative value", s)
		}
		return v, nil
	}
	if q.ArrivalS, err = float("arrival_s", true); err != nil {
		return q, err
	}
	if q.TTFTMs, err = float("ttft_ms", q.Completed); err != nil {
		return q, err
	}
	if q.E2EMs, err = float("e2e_ms", q.Completed); err != nil {
		return q, err
	}
	if !q.Completed {
		return q, nil
	}
	if q.E2EMs < q.TTFTMs {
		return q, fail("e2e_ms", "%v is below ttft_ms %v", q.E2EMs, q.TTFTMs)
	}
	if _, _, ok := cell("tpot_ms"); !ok {
		q.TPOTMs = tpotMs(q.TTFTMs, q.E2EMs, q.OutputTokens)
	} else if q.TPOTMs, err = float("tpot_ms", q.OutputTokens >= 2); err != nil {
		return q, err
	}
	return q, nil
}
