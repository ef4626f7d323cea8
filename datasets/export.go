package datasets

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/spec"
)

// Export formats for benchmark clients.
const (
	// FormatCSV is the trace CSV itself (WriteTrace).
	FormatCSV = "csv"
	// FormatVLLMBench is the JSONL that vLLM's serving benchmark replays
	// with --dataset-name custom: {"prompt": TEXT, "output_tokens": N}.
	FormatVLLMBench = "vllm-bench"
	// FormatMooncake is the Mooncake trace JSONL that replays arrival times
	// (AIPerf --custom-dataset-type mooncake_trace --fixed-schedule):
	// {"timestamp": MS, "input_length": N, "output_length": M}.
	FormatMooncake = "mooncake"
)

// ExportFormats lists the export formats.
func ExportFormats() []string { return []string{FormatCSV, FormatVLLMBench, FormatMooncake} }

// promptWords are common English words that most LLM tokenizers encode as
// one token each when preceded by a space.
var promptWords = [...]string{
	"the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at", "from", "his",
	"her", "it", "an", "are", "were", "be", "this", "which", "or", "had", "not", "but", "have", "they", "all", "one",
	"been", "their", "has", "more", "also", "when", "who", "first", "new", "other", "some", "into", "after", "two",
	"its", "there", "time", "only", "over", "most", "would", "such", "many", "these", "about", "made", "than", "them",
	"then", "people", "years", "can", "out", "up", "what", "so", "if", "no", "do", "we", "he", "she", "you", "my",
	"our", "your", "will", "may", "could", "should", "like", "just", "each", "any", "well", "way", "part", "world",
	"year", "day", "work", "life", "city", "game", "state", "high", "small", "large", "place", "water", "house",
}

// PromptMaker makes synthetic prompt text of a given token length. With a
// tokenizer the length is exact (checked by counting); without one it is
// one word per token, which most tokenizers match within a few percent.
// Each request's words are drawn from its own seeded stream, so prompts
// share no prefix (no accidental prefix-cache hits) and are reproducible.
type PromptMaker struct {
	tok   *Tokenizer
	seed  uint64
	words []string
}

// NewPromptMaker returns a PromptMaker; tok may be nil.
func NewPromptMaker(tok *Tokenizer, seed uint64) (*PromptMaker, error) {
	m := &PromptMaker{tok: tok, seed: seed, words: promptWords[:]}
	if tok == nil {
		return m, nil
	}
	var single []string
	for _, w := range promptWords {
		n, err := tok.Count(" " + w)
		if err != nil {
			return nil, err
		}
		if n == 1 {
			single = append(single, w)
		}
	}
	if len(single) >= 16 {
		m.words = single
	}
	return m, nil
}

// Exact reports whether prompt lengths are exact (a tokenizer is set).
func (m *PromptMaker) Exact() bool { return m.tok != nil }

// Prompt returns the prompt of request id with the given token count.
func (m *PromptMaker) Prompt(id, tokens int) (string, error) {
	r := rand.New(rand.NewPCG(m.seed, uint64(id)))
	words := make([]string, 0, tokens+8)
	grow := func(k int) {
		for range k {
			words = append(words, m.words[r.IntN(len(m.words))])
		}
	}
	grow(tokens)
	text := strings.Join(words, " ")
	if m.tok == nil {
		return text, nil
	}
	n, err := m.tok.Count(text)
	for err == nil && n < tokens {
		grow(tokens - n)
		text = strings.Join(words, " ")
		n, err = m.tok.Count(text)
	}
	if err != nil || n == tokens {
		return text, err
	}
	// The words encode to more than one token each: take the longest run of
	// words that fits, then top it up word by word.
	lo, hi := 0, len(words) // count(words[:lo]) <= tokens < count(words[:hi])
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		c, err := m.tok.Count(strings.Join(words[:mid], " "))
		if err != nil {
			return "", err
		}
		if c <= tokens {
			lo = mid
		} else {
			hi = mid
		}
	}
	text = strings.Join(words[:lo], " ")
	if n, err = m.tok.Count(text); err != nil {
		return "", err
	}
	for n < tokens {
		best, bestN := "", n
		for _, w := range m.words {
			cand := w
			if text != "" {
				cand = text + " " + w
			}
			c, err := m.tok.Count(cand)
			if err != nil {
				return "", err
			}
			if c <= tokens && c > bestN {
				best, bestN = cand, c
				if c == tokens {
					break
				}
			}
		}
		if best == "" {
			return "", fmt.Errorf("request %d: could not make a prompt of exactly %d tokens (stuck at %d)", id, tokens, n)
		}
		text, n = best, bestN
	}
	return text, nil
}

// ExportVLLMBench writes requests as vLLM benchmark JSONL (FormatVLLMBench),
// one line per request in order, prompts from m. vLLM replays it with
//
//	vllm bench serve --dataset-name custom --dataset-path FILE \
//	  --custom-output-len -1 --custom-skip-chat-template --disable-shuffle \
//	  --ignore-eos --num-prompts N --request-rate R [--burstiness B]
//
// (--custom-output-len -1 makes vLLM use output_tokens instead of its
// default 256; --ignore-eos makes the model produce exactly that many;
// without --custom-skip-chat-template vLLM wraps each prompt in the chat
// template, adding tokens; without --disable-shuffle it shuffles lines).
// vLLM draws its own arrival times (Poisson, or gamma with burstiness
// 1/CV^2); it cannot replay recorded ones: use FormatMooncake for that.
func ExportVLLMBench(path string, reqs []spec.Request, m *PromptMaker) error {
	if err := checkRequests(reqs); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range reqs {
			p, err := m.Prompt(r.ID, r.PromptTokens)
			if err != nil {
				return err
			}
			if err := enc.Encode(struct {
				Prompt       string `json:"prompt"`
				OutputTokens int    `json:"output_tokens"`
			}{p, r.OutputTokens}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ExportMooncake writes requests as Mooncake trace JSONL (FormatMooncake):
// timestamp in integer milliseconds (omitted for a trace without arrival
// times), input_length and output_length in tokens, and hash_ids when the
// request has them (which must then be runs of MooncakeHashBlockTokens
// tokens, the format's).
func ExportMooncake(path string, reqs []spec.Request) error {
	if err := checkRequests(reqs); err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	for i, r := range reqs {
		if len(r.HashIDs) > 0 && r.HashBlockTokens != MooncakeHashBlockTokens {
			return fmt.Errorf("export %s: request %d: hash ids of %d-token runs; the Mooncake format's are %d tokens", path, i, r.HashBlockTokens, MooncakeHashBlockTokens)
		}
	}
	arrivals := HasArrivals(reqs)
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		for _, r := range reqs {
			if arrivals {
				fmt.Fprintf(w, `{"timestamp": %d, `, int64(math.Round(r.ArrivalS*1000)))
			} else {
				w.WriteString("{")
			}
			fmt.Fprintf(w, `"input_length": %d, "output_length": %d`, r.PromptTokens, r.OutputTokens)
			if len(r.HashIDs) > 0 {
				w.WriteString(`, "hash_ids": [`)
				for i, id := range r.HashIDs {
					if i > 0 {
						w.WriteString(", ")
					}
					w.WriteString(strconv.FormatUint(id, 10))
				}
				w.WriteString("]")
			}
			if _, err := w.WriteString("}\n"); err != nil {
				return err
			}
		}
		return nil
	})
}
