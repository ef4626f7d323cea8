package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/ftk-dev/ftk/spec"
)

// ShareGPTOptions controls ImportShareGPT.
type ShareGPTOptions struct {
	// Tokenizer counts tokens exactly; nil estimates them (EstimateTokens)
	// and marks the result as estimated.
	Tokenizer *Tokenizer
	// FirstTurnOnly keeps only the first human->gpt exchange of each
	// conversation, as vLLM's ShareGPT benchmark does.
	FirstTurnOnly bool
}

// ShareGPTSummary tells what ImportShareGPT read.
type ShareGPTSummary struct {
	Conversations int  // conversations read
	Requests      int  // requests made
	Skipped       int  // exchanges skipped for an empty prompt or response
	Estimated     bool // token counts are estimates, not tokenizer counts
}

// EstimateTokens estimates the tokens of text as ceil(characters / 4), the
// usual rule of thumb for English with LLM tokenizers.
func EstimateTokens(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// shareGPTConversation is one element of a ShareGPT file.
type shareGPTConversation struct {
	ID            json.RawMessage `json:"id"`
	Conversations *[]struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// ImportShareGPT reads a ShareGPT JSON file (the public format: an array of
// {"id": ..., "conversations": [{"from": "human", "value": ...},
// {"from": "gpt", "value": ...}, ...]}) and makes one request per
// human->gpt exchange, in file order:
//
//   - the prompt is the whole conversation so far: every earlier message
//     (human, gpt or system) plus this human message, as a chat client
//     resends it; its token count is the sum of the messages' counts (no chat
//     template tokens);
//   - the output is the gpt reply;
//   - Session is the conversation id (ContentID of its text) and Turn
//     counts its exchanges from 1, so a prefix cache reuses the history;
//   - ArrivalS is NaN: give arrivals with Generate (trace:FILE workload).
//
// Speakers "human"/"user" ask; "gpt"/"chatgpt"/"assistant"/"bard"/"bing"
// answer; "system" only adds to the history. An exchange whose prompt or
// reply counts zero tokens is skipped and counted in Skipped. Errors name
// the file, line and column.
func ImportShareGPT(path string, opts ShareGPTOptions) ([]spec.Request, ShareGPTSummary, error) {
	sum := ShareGPTSummary{Estimated: opts.Tokenizer == nil}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, sum, fmt.Errorf("sharegpt: %w", err)
	}
	count := func(s string) (int, error) {
		if opts.Tokenizer == nil {
			return EstimateTokens(s), nil
		}
		return opts.Tokenizer.Count(s)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntaxErr := func(err error) error {
		// The decoder's offsets are not absolute: re-check the whole input.
		var raw json.RawMessage
		if uerr := json.Unmarshal(data, &raw); uerr != nil {
			return jsonPosError(path, data, uerr)
		}
		return fmt.Errorf("sharegpt %s: %w", path, err)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, sum, syntaxErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, sum, posError(path, data, 0, errors.New("want a JSON array of conversations"))
	}
	var reqs []spec.Request
	for dec.More() {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, sum, syntaxErr(err)
		}
		// The element starts after the separating comma and white space.
		start += int64(len(data[start:]) - len(bytes.TrimLeft(data[start:], ", \t\r\n")))
		bad := func(format string, args ...any) error {
			return posError(path, data, start, fmt.Errorf("conversation %d: %s", sum.Conversations, fmt.Sprintf(format, args...)))
		}
		var conv shareGPTConversation
		if err := json.Unmarshal(raw, &conv); err != nil {
			if pe := jsonPosErrorAt(path, data, start, err); pe != err {
				return nil, sum, pe
			}
			return nil, sum, bad("%v", err)
		}
		if conv.Conversations == nil {
			return nil, sum, bad(`no "conversations" field (want {"id": ..., "conversations": [{"from": ..., "value": ...}, ...]})`)
		}
		session := ContentID([]byte(conversationID(conv.ID, sum.Conversations)))
		turn := 0
		history := 0
		human := -1 // tokens of the unanswered human message, -1 when none
	turns:
		for k, t := range *conv.Conversations {
			n, err := count(t.Value)
			if err != nil {
				return nil, sum, bad("turn %d: %v", k, err)
			}
			switch t.From {
			case "human", "user":
				if human >= 0 {
					history += human
				}
				human = n
			case "gpt", "chatgpt", "assistant", "bard", "bing":
				if human < 0 {
					history += n
					continue
				}
				prompt := history + human
				if prompt >= 1 && n >= 1 && prompt <= maxTokens {
					turn++
					reqs = append(reqs, spec.Request{ID: len(reqs), ArrivalS: math.NaN(), PromptTokens: prompt, OutputTokens: n, Session: session, Turn: turn})
				} else {
					sum.Skipped++
				}
				history, human = prompt+n, -1
				if opts.FirstTurnOnly {
					break turns
				}
			case "system":
				history += n
			default:
				return nil, sum, bad("turn %d: unknown speaker %q (want human, gpt or system)", k, t.From)
			}
		}
		sum.Conversations++
	}
	if _, err := dec.Token(); err != nil {
		return nil, sum, syntaxErr(err)
	}
	sum.Requests = len(reqs)
	if len(reqs) == 0 {
		return nil, sum, &ParseError{Path: path, Err: fmt.Errorf("no human->gpt exchange in %d conversations", sum.Conversations)}
	}
	return reqs, sum, nil
}

// conversationID returns the id as text, or "#i" when it is missing.
func conversationID(raw json.RawMessage, i int) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	if len(raw) > 0 && string(raw) != "null" {
		return string(raw)
	}
	return "#" + strconv.Itoa(i)
}
