package datasets

import (
	"bufio"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/spec"
)

// WriteTrace writes requests as a trace CSV that ReadTrace reads back to
// the same requests. Columns: arrived_at (only when the requests have
// arrival times), num_prefill_tokens, num_decode_tokens, then the
// shared-content columns that any request uses (contentColumns). Arrival times are written as the
// shortest fixed-notation decimal that reads back to the same float64
// (strconv.FormatFloat(t, 'f', -1, 64): "0", "4.314579",
// "5.8926549999999995"), so the round trip is exact and identical input
// gives byte-identical output. Generated arrivals are whole microseconds,
// so they print with at most six decimals. The file is written to a temporary file in the same directory and
// renamed into place, so a failed write never leaves a partial trace.
func WriteTrace(path string, reqs []spec.Request) error {
	return WriteTraceInfo(path, reqs, TraceInfo{})
}

// WriteTraceInfo is WriteTrace that also records info: with
// TokensEstimated it adds a token_counts column holding "estimated".
func WriteTraceInfo(path string, reqs []spec.Request, info TraceInfo) error {
	if len(reqs) == 0 {
		return fmt.Errorf("write trace %s: no requests", path)
	}
	_, err := writeTrace(path, slices.Values(reqs), func() error { return nil }, info)
	return err
}

// WriteGenerated writes the requests of NewSource(w, a, n, seed) as a
// trace CSV, the bytes WriteTraceInfo writes for Generate's requests,
// holding one request at a time: the source, deterministic, runs twice,
// once to check the requests and find the content columns they use, once
// to write them. It returns the number of requests written.
func WriteGenerated(path string, w Workload, a Arrivals, n int, seed uint64, info TraceInfo) (int, error) {
	if _, err := NewSource(w, a, n, seed); err != nil {
		return 0, err
	}
	var srcErr error
	reqs := func(yield func(spec.Request) bool) {
		src, err := NewSource(w, a, n, seed)
		if err != nil {
			srcErr = err
			return
		}
		for r, ok := src.Next(); ok && yield(r); r, ok = src.Next() {
		}
		srcErr = src.Err()
	}
	return writeTrace(path, reqs, func() error { return srcErr }, info)
}

// writeTrace checks reqs (read once) and writes them (read again); after
// each read, readErr says whether reqs ended early (an error naming the
// file read, returned as it is).
func writeTrace(path string, reqs iter.Seq[spec.Request], readErr func() error, info TraceInfo) (int, error) {
	var (
		check   requestChecker
		content contentPresent
	)
	for r := range reqs {
		if err := check.next(&r); err != nil {
			return 0, fmt.Errorf("write trace %s: %w", path, err)
		}
		content.see(&r)
	}
	if err := readErr(); err != nil {
		return 0, err // names its own file
	}
	if check.n == 0 {
		return 0, fmt.Errorf("write trace %s: no requests", path)
	}
	written := 0
	err := atomicfile.Write(path, func(w *bufio.Writer) error {
		var header []string
		if check.arrivals {
			header = append(header, ColArrivedAt)
		}
		header = append(header, ColPrompt, ColOutput)
		header = content.header(header)
		if info.TokensEstimated {
			header = append(header, ColTokenCounts)
		}
		w.WriteString(strings.Join(header, ","))
		w.WriteByte('\n')
		buf := make([]byte, 0, 128)
		for r := range reqs {
			buf = buf[:0]
			if check.arrivals {
				buf = strconv.AppendFloat(buf, r.ArrivalS, 'f', -1, 64)
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(r.PromptTokens), 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, int64(r.OutputTokens), 10)
			buf = content.appendRow(buf, &r)
			if info.TokensEstimated {
				buf = append(buf, ",estimated"...)
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
			written++
		}
		if err := readErr(); err != nil {
			return err
		}
		if written != check.n {
			return fmt.Errorf("the requests changed between the check (%d) and the write (%d)", check.n, written)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return written, nil
}

// requestChecker checks requests one at a time for what ReadTrace would
// refuse: token counts below 1, arrival times that are partly missing,
// negative, not finite or decreasing, and strings that cannot sit in one
// CSV line. The first request decides whether all have arrival times.
type requestChecker struct {
	n        int
	arrivals bool
	prev     float64
}

func (c *requestChecker) next(r *spec.Request) error {
	i := c.n
	c.n++
	if i == 0 {
		c.arrivals = !math.IsNaN(r.ArrivalS)
	}
	switch {
	case r.PromptTokens < 1 || r.PromptTokens > maxTokens:
		return fmt.Errorf("request %d: prompt tokens %d out of range [1, %d]", i, r.PromptTokens, maxTokens)
	case r.OutputTokens < 1 || r.OutputTokens > maxTokens:
		return fmt.Errorf("request %d: output tokens %d out of range [1, %d]", i, r.OutputTokens, maxTokens)
	}
	if err := checkContent(r); err != nil {
		return fmt.Errorf("request %d: %w", i, err)
	}
	if math.IsNaN(r.ArrivalS) == c.arrivals {
		return fmt.Errorf("request %d: some requests have arrival times and some do not", i)
	}
	if !c.arrivals {
		return nil
	}
	if math.IsInf(r.ArrivalS, 0) || r.ArrivalS < 0 {
		return fmt.Errorf("request %d: arrival %g s must be finite and >= 0", i, r.ArrivalS)
	}
	if i > 0 && r.ArrivalS < c.prev {
		return fmt.Errorf("request %d: arrival %g s is before the previous %g s", i, r.ArrivalS, c.prev)
	}
	c.prev = r.ArrivalS
	return nil
}

// checkRequests checks reqs as requestChecker does; an empty slice is an
// error.
func checkRequests(reqs []spec.Request) error {
	if len(reqs) == 0 {
		return fmt.Errorf("no requests")
	}
	var c requestChecker
	for i := range reqs {
		if err := c.next(&reqs[i]); err != nil {
			return err
		}
	}
	return nil
}
