package datasets

import (
	"bufio"
	"fmt"
	"math"
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
	if err := checkRequests(reqs); err != nil {
		return fmt.Errorf("write trace %s: %w", path, err)
	}
	arrivals := HasArrivals(reqs)
	var content contentPresent
	for i := range reqs {
		content.see(&reqs[i])
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		var header []string
		if arrivals {
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
		for _, r := range reqs {
			buf = buf[:0]
			if arrivals {
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
		}
		return nil
	})
}

// checkRequests checks what ReadTrace would refuse: token counts below 1,
// arrival times that are partly missing, negative, not finite or decreasing,
// and strings that cannot sit in one CSV line.
func checkRequests(reqs []spec.Request) error {
	if len(reqs) == 0 {
		return fmt.Errorf("no requests")
	}
	arrivals := HasArrivals(reqs)
	prev := 0.0
	for i, r := range reqs {
		switch {
		case r.PromptTokens < 1 || r.PromptTokens > maxTokens:
			return fmt.Errorf("request %d: prompt tokens %d out of range [1, %d]", i, r.PromptTokens, maxTokens)
		case r.OutputTokens < 1 || r.OutputTokens > maxTokens:
			return fmt.Errorf("request %d: output tokens %d out of range [1, %d]", i, r.OutputTokens, maxTokens)
		}
		if err := checkContent(&r); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if math.IsNaN(r.ArrivalS) == arrivals {
			return fmt.Errorf("request %d: some requests have arrival times and some do not", i)
		}
		if !arrivals {
			continue
		}
		if math.IsInf(r.ArrivalS, 0) || r.ArrivalS < 0 {
			return fmt.Errorf("request %d: arrival %g s must be finite and >= 0", i, r.ArrivalS)
		}
		if i > 0 && r.ArrivalS < prev {
			return fmt.Errorf("request %d: arrival %g s is before the previous %g s", i, r.ArrivalS, prev)
		}
		prev = r.ArrivalS
	}
	return nil
}
