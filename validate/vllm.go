package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// vllmResult holds the fields of a vLLM serving benchmark result JSON that
// validation reads. Per-request arrays are saved by benchmark_serving.py
// with --save-result, and by "vllm bench serve" only with --save-detailed.
// Times are seconds.
type vllmResult struct {
	ModelID    string       `json:"model_id"`
	Duration   *float64     `json:"duration"`
	Completed  *int         `json:"completed"`
	InputLens  []int        `json:"input_lens"`
	OutputLens []int        `json:"output_lens"`
	TTFTs      []*float64   `json:"ttfts"`
	ITLs       [][]*float64 `json:"itls"`
	Errors     []string     `json:"errors"`
	StartTimes []*float64   `json:"start_times"`
	// Run identity, from vllm's --metadata KEY=VALUE.
	Config     any `json:"config"`
	Workload   any `json:"workload"`
	Repetition any `json:"repetition"`
}

// ReadVLLMBenchmark reads a vLLM serving benchmark result JSON as a measured
// run. Per request: TTFT from ttfts, E2E = TTFT + sum(itls) (which is how
// the benchmark's own latency is timed), TPOT by spec's definition from E2E,
// TTFT and output_lens; a request with a non-empty errors entry did not
// complete. A completed request has at most output_lens - 1 gaps in itls
// (one per token after the first; fewer when the server streamed several
// tokens in one chunk, as speculative decoding does); more is refused. The makespan is the benchmark's duration. The run's identity
// comes from the metadata keys config, workload and repetition when present
// (zero RunID otherwise; see the package doc).
func ReadVLLMBenchmark(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res vllmResult
	if err := json.Unmarshal(jsonNonFiniteToNull(data), &res); err != nil {
		return nil, fmt.Errorf("%s: not a vLLM benchmark result JSON: %w", path, err)
	}
	if res.InputLens == nil && res.TTFTs == nil {
		return nil, fmt.Errorf("%s: no per-request arrays (input_lens, output_lens, ttfts, itls): save the benchmark with --save-result (and --save-detailed for vllm bench serve)", path)
	}
	n := len(res.InputLens)
	for name, l := range map[string]int{"output_lens": len(res.OutputLens), "ttfts": len(res.TTFTs), "itls": len(res.ITLs)} {
		if l != n {
			return nil, fmt.Errorf("%s: input_lens has %d entries but %s has %d", path, n, name, l)
		}
	}
	if res.Errors != nil && len(res.Errors) != n {
		return nil, fmt.Errorf("%s: input_lens has %d entries but errors has %d", path, n, len(res.Errors))
	}
	if res.StartTimes != nil && len(res.StartTimes) != n {
		return nil, fmt.Errorf("%s: input_lens has %d entries but start_times has %d", path, n, len(res.StartTimes))
	}
	if res.Duration == nil {
		return nil, fmt.Errorf("%s: duration is missing or NaN: the makespan is unknown", path)
	}
	firstStart := math.Inf(1)
	for _, s := range res.StartTimes {
		if s == nil {
			firstStart = math.NaN()
			break
		}
		firstStart = min(firstStart, *s)
	}
	run := &Run{Side: Measured, Source: path, Model: res.ModelID, MakespanS: *res.Duration, Requests: make([]Request, n)}
	for i := range n {
		q := Request{ID: i, ArrivalS: math.NaN(), PromptTokens: res.InputLens[i], OutputTokens: res.OutputLens[i],
			TTFTMs: math.NaN(), TPOTMs: math.NaN(), E2EMs: math.NaN()}
		if res.StartTimes != nil {
			q.ArrivalS = *res.StartTimes[i] - firstStart
		}
		q.Completed = res.Errors == nil && q.OutputTokens > 0 || res.Errors != nil && res.Errors[i] == ""
		if q.Completed {
			if res.TTFTs[i] == nil {
				return nil, fmt.Errorf("%s: ttfts[%d] is NaN, infinite or null for a completed request", path, i)
			}
			if g := len(res.ITLs[i]); g > q.OutputTokens-1 {
				return nil, fmt.Errorf("%s: itls[%d] has %d gaps but output_lens[%d] is %d tokens (at most %d gaps, one per token after the first): the arrays do not describe the same request",
					path, i, g, i, q.OutputTokens, q.OutputTokens-1)
			}
			e2eS := *res.TTFTs[i]
			for j, g := range res.ITLs[i] {
				if g == nil {
					return nil, fmt.Errorf("%s: itls[%d][%d] is NaN, infinite or null", path, i, j)
				}
				e2eS += *g
			}
			q.TTFTMs = *res.TTFTs[i] * 1e3
			q.E2EMs = e2eS * 1e3
			q.TPOTMs = tpotMs(q.TTFTMs, q.E2EMs, q.OutputTokens)
		}
		run.Requests[i] = q
	}
	if res.Completed != nil && *res.Completed != run.Completed() {
		return nil, fmt.Errorf("%s: completed is %d but %d requests have no error", path, *res.Completed, run.Completed())
	}
	run.ID, err = metadataID(res.Config, res.Workload, res.Repetition)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return run, nil
}

// metadataID builds a run identity from metadata values (strings, as vLLM's
// --metadata writes them, or numbers); zero when config or workload is absent.
func metadataID(config, workload, repetition any) (RunID, error) {
	str := func(v any) string {
		switch x := v.(type) {
		case string:
			return strings.TrimSpace(x)
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return ""
	}
	id := RunID{Config: str(config), Workload: str(workload)}
	if id.Config == "" || id.Workload == "" {
		return RunID{}, nil
	}
	if r := str(repetition); r != "" {
		rep, err := strconv.Atoi(strings.TrimPrefix(r, "r"))
		if err != nil || rep < 1 {
			return RunID{}, fmt.Errorf("metadata repetition %q: want a positive integer", r)
		}
		id.Repetition = rep
	}
	return id, nil
}

// jsonNonFiniteToNull rewrites the NaN, Infinity and -Infinity tokens that
// Python's json module writes (outside strings) as null, so that they decode
// as missing values and are reported by name instead of failing the parse.
func jsonNonFiniteToNull(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		matched := false
		for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
			if bytes.HasPrefix(data[i:], []byte(tok)) {
				out.WriteString("null")
				i += len(tok) - 1
				matched = true
				break
			}
		}
		if !matched {
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}
