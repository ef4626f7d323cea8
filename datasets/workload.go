package datasets

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk"
	"github.com/ftk-dev/ftk/spec"
)

// Workload kinds.
const (
	// KindFixed: every request has the same prompt and output length.
	KindFixed = "fixed"
	// KindSampled: (prompt, output) pairs drawn with replacement from a
	// real trace, keeping each pair's correlation.
	KindSampled = "sampled"
	// KindTrace: a trace file replayed in order.
	KindTrace = "trace"
)

// Builtin is a built-in workload whose lengths come from a real trace.
type Builtin struct {
	Name string // workload spec, e.g. "splitwise-conv"
	// File is the trace's path in the repository, under which the binary
	// embeds it (ftk.Traces).
	File string
	Doc  string // one-line description
}

// builtins are the built-in trace-backed workloads (read-only).
var builtins = [...]Builtin{
	{"splitwise-conv", "testdata/traces/splitwise_conv.csv", "Azure LLM inference trace 2023, conversation (Splitwise); has arrival times"},
	{"splitwise-code", "testdata/traces/splitwise_code.csv", "Azure LLM inference trace 2023, code completion (Splitwise); has arrival times"},
	{"arxiv-summarization", "testdata/traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", "arXiv summarization, Llama 2 tokenizer lengths; no arrival times"},
}

// Builtins returns the built-in trace-backed workloads, whose traces the
// binary carries (ftk.Traces).
func Builtins() []Builtin { b := builtins; return b[:] }

// FixedWorkloads returns the standard fixed-length workloads; any fixed:PxO
// with P, O >= 1 is accepted.
func FixedWorkloads() []string {
	return []string{"fixed:1024x1024", "fixed:1024x256", "fixed:256x1024"}
}

// Workload is a distribution of request lengths, optionally with recorded
// arrival times. Make one with ParseWorkload; the zero value is not valid.
type Workload struct {
	// Name is the spec it was parsed from, e.g. "fixed:1024x256",
	// "splitwise-conv" or "trace:run1.csv".
	Name string
	// Kind is KindFixed, KindSampled or KindTrace.
	Kind string
	// PromptTokens and OutputTokens are the lengths of a fixed workload.
	PromptTokens, OutputTokens int
	// Path is the trace file behind a sampled or trace workload.
	Path string
	// TokensEstimated is true when the trace file's token counts are
	// estimates (see TraceInfo).
	TokensEstimated bool
	// Conversation is the sessions of a conversation workload.
	Conversation Conversation

	reqs  []spec.Request // the trace rows of a sampled workload
	trace *traceMeta     // what a read of a trace workload's file found; its rows are streamed (TraceReader)
}

// HasArrivals reports whether the workload has recorded arrival times that
// the "replay" arrival process can use.
func (w Workload) HasArrivals() bool {
	if w.trace != nil {
		return w.trace.hasArrivals
	}
	return HasArrivals(w.reqs)
}

// Requests returns the rows of the trace behind a sampled workload (shared,
// do not modify), or nil for a fixed workload and for a trace file
// (trace:PATH), whose rows are not held but read as they are replayed
// (Rows counts them; NewSource or OpenTrace reads them).
func (w Workload) Requests() []spec.Request { return w.reqs }

// Rows returns the number of rows of the trace behind a sampled or trace
// workload, 0 for the others.
func (w Workload) Rows() int {
	if w.trace != nil {
		return w.trace.rows
	}
	return len(w.reqs)
}

// String returns the workload's spec.
func (w Workload) String() string { return w.Name }

// ParseWorkload parses a workload spec; the built-in workloads read the
// traces embedded in the binary (ftk.Traces), from any folder:
//
//	fixed:PxO             P prompt and O output tokens, e.g. fixed:1024x256
//	splitwise-conv        lengths sampled from testdata/traces/splitwise_conv.csv
//	splitwise-code        lengths sampled from testdata/traces/splitwise_code.csv
//	arxiv-summarization   lengths sampled from the arXiv summarization trace
//	trace:PATH            a trace CSV replayed in order (lengths, and arrival
//	                      times when it has them)
//	shared-prefix:groups=G,users=U,system=S,question=Q,output=O
//	                      G system prompts of S tokens, each serving U users
//	                      per deck, with Q-token questions (Conversation)
//	sessions:groups=G,users=U,system=S,turns=T,question=Q,output=O
//	                      chat sessions of T turns whose history grows; they
//	                      need clients (Clients) to wait for each reply
func ParseWorkload(s string) (Workload, error) {
	switch {
	case strings.HasPrefix(s, "fixed:"):
		p, o, ok := strings.Cut(strings.TrimPrefix(s, "fixed:"), "x")
		pn, perr := strconv.Atoi(p)
		on, oerr := strconv.Atoi(o)
		if !ok || perr != nil || oerr != nil || pn < 1 || on < 1 || pn > maxTokens || on > maxTokens {
			return Workload{}, fmt.Errorf("workload %q: want fixed:PxO with prompt and output tokens >= 1, e.g. fixed:1024x256", s)
		}
		return Workload{Name: s, Kind: KindFixed, PromptTokens: pn, OutputTokens: on}, nil
	case strings.HasPrefix(s, "shared-prefix:") || strings.HasPrefix(s, "sessions:"):
		return parseConversation(s)
	case strings.HasPrefix(s, "trace:"):
		path := strings.TrimPrefix(s, "trace:")
		if path == "" {
			return Workload{}, fmt.Errorf("workload %q: want trace:PATH", s)
		}
		return loadTraceWorkload(s, KindTrace, path)
	}
	for _, b := range builtins {
		if b.Name == s {
			data, err := fs.ReadFile(ftk.Traces, b.File)
			if err != nil {
				return Workload{}, fmt.Errorf("workload %s: the embedded trace %s: %w", s, b.File, err)
			}
			reqs, info, err := parseTrace(b.File, data)
			if err != nil {
				return Workload{}, fmt.Errorf("workload %s: %w", s, err)
			}
			return Workload{Name: s, Kind: KindSampled, Path: b.File, TokensEstimated: info.TokensEstimated, reqs: reqs}, nil
		}
	}
	return Workload{}, fmt.Errorf("unknown workload %q: want fixed:PxO, %s, trace:PATH, shared-prefix:... or sessions:...", s, strings.Join(BuiltinNames(), ", "))
}

// BuiltinNames returns the names of the built-in trace-backed workloads.
func BuiltinNames() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.Name
	}
	return names
}

// IsWorkloadSpec reports whether s names a workload rather than a file:
// it starts with fixed:, trace:, shared-prefix: or sessions:, or is a
// built-in name.
func IsWorkloadSpec(s string) bool {
	if strings.HasPrefix(s, "fixed:") || strings.HasPrefix(s, "trace:") || strings.HasPrefix(s, "shared-prefix:") || strings.HasPrefix(s, "sessions:") {
		return true
	}
	for _, b := range builtins {
		if b.Name == s {
			return true
		}
	}
	return false
}

// peekWorkload is ParseWorkload reading only the header of a trace file:
// enough to pick its arrival process (RunArrivals.Describe), not to
// replay it.
func peekWorkload(s string) (Workload, error) {
	path, ok := strings.CutPrefix(s, "trace:")
	if !ok || path == "" {
		return ParseWorkload(s)
	}
	t, err := OpenTrace(path)
	if err != nil {
		return Workload{}, fmt.Errorf("workload %s: %w", s, err)
	}
	t.Close()
	return Workload{Name: s, Kind: KindTrace, Path: path, trace: &traceMeta{hasArrivals: t.HasArrivals()}}, nil
}

// loadTraceWorkload checks every row of the trace file at path, holding
// one at a time; a Source reads them again as it replays them.
func loadTraceWorkload(name, kind, path string) (Workload, error) {
	m, err := scanTrace(path)
	if err != nil {
		return Workload{}, fmt.Errorf("workload %s: %w", name, err)
	}
	return Workload{Name: name, Kind: kind, Path: path, TokensEstimated: m.info.TokensEstimated, trace: &m}, nil
}
