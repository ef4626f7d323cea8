package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenizer counts tokens as a Hugging Face tokenizer.json does, for the
// kinds used by today's decoder-only models: a BPE model (GPT-2, Llama 2/3,
// Mistral, Qwen style: byte-level or byte-fallback) or a WordLevel model,
// with the normalizers NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace,
// Strip and Sequence, and the pre-tokenizers ByteLevel, Metaspace, Split,
// Whitespace, WhitespaceSplit, Digits and Sequence. Added tokens (special
// or not) found in the text count one each. Counts are of the text alone:
// the post-processor's BOS/EOS and any chat template are not counted.
// LoadTokenizer refuses any other component with an error saying so.
//
// Split patterns are Oniguruma regexes; they run on Go's RE2 after
// translating \s, \w and \d to their Unicode meaning and emulating the one
// look-ahead those patterns use, `\s+(?!\S)`. A Tokenizer is not safe for
// concurrent use (it caches words).
type Tokenizer struct {
	path  string
	added [256][]addedToken // by first byte, longest first
	norm  []normalizer
	pre   []preTokenizer
	model tokenModel
}

// tokenModel counts the tokens of one pre-tokenized piece.
type tokenModel interface {
	count(piece string) (int, error)
}

type addedToken struct {
	content                    string
	singleWord, lstrip, rstrip bool
}

// tokenizerJSON is the part of tokenizer.json that token counts depend on.
type tokenizerJSON struct {
	AddedTokens []struct {
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
}

// ErrTokenizerUnsupported marks a tokenizer.json with a component this
// package cannot reproduce exactly.
var ErrTokenizerUnsupported = errors.New("exact counts need a tokenizer.json with a BPE or WordLevel model and supported normalizer/pre-tokenizer (omit --tokenizer for the labelled ~4 characters/token estimate)")

// LoadTokenizer reads a Hugging Face tokenizer.json.
func LoadTokenizer(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var tj tokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer: %w", jsonPosError(path, data, err))
	}
	t := &Tokenizer{path: path}
	for _, a := range tj.AddedTokens {
		if a.Content == "" {
			continue
		}
		t.added[a.Content[0]] = append(t.added[a.Content[0]], addedToken{a.Content, a.SingleWord, a.LStrip, a.RStrip})
	}
	for _, list := range &t.added {
		sort.SliceStable(list, func(i, j int) bool { return len(list[i].content) > len(list[j].content) })
	}
	wrap := func(what string, err error) error {
		return fmt.Errorf("tokenizer %s: %s: %w", path, what, err)
	}
	if t.norm, err = parseNormalizer(tj.Normalizer); err != nil {
		return nil, wrap("normalizer", err)
	}
	if t.pre, err = parsePreTokenizer(tj.PreTokenizer); err != nil {
		return nil, wrap("pre_tokenizer", err)
	}
	if t.model, err = parseModel(tj.Model); err != nil {
		return nil, wrap("model", err)
	}
	return t, nil
}

// Path returns the file the tokenizer was read from.
func (t *Tokenizer) Path() string { return t.path }

// Count returns the number of tokens text encodes to, without special
// tokens added by post-processing.
func (t *Tokenizer) Count(text string) (int, error) {
	total := 0
	start := 0 // start of the current plain segment
	first := true
	flush := func(end int) error {
		if end > start {
			n, err := t.countSegment(text[start:end], first && start == 0)
			if err != nil {
				return err
			}
			total += n
		}
		first = false
		return nil
	}
	for i := 0; i < len(text); {
		a, end, ok := t.matchAdded(text, i)
		if !ok {
			i++
			continue
		}
		segEnd := i
		if a.lstrip {
			segEnd = len(strings.TrimRightFunc(text[start:i], unicode.IsSpace)) + start
		}
		if err := flush(segEnd); err != nil {
			return 0, err
		}
		total++
		if a.rstrip {
			end = len(text) - len(strings.TrimLeftFunc(text[end:], unicode.IsSpace))
		}
		i, start = end, end
	}
	if err := flush(len(text)); err != nil {
		return 0, err
	}
	return total, nil
}

// matchAdded returns the longest added token at text[i:], honouring
// single_word.
func (t *Tokenizer) matchAdded(text string, i int) (addedToken, int, bool) {
	for _, a := range t.added[text[i]] {
		if !strings.HasPrefix(text[i:], a.content) {
			continue
		}
		end := i + len(a.content)
		if a.singleWord {
			before, _ := utf8.DecodeLastRuneInString(text[:i])
			after, _ := utf8.DecodeRuneInString(text[end:])
			if (i > 0 && isWordRune(before)) || (end < len(text) && isWordRune(after)) {
				continue
			}
		}
		return a, end, true
	}
	return addedToken{}, 0, false
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.M, r)
}

// countSegment normalizes, pre-tokenizes and counts text that holds no added
// token. atStart is true when the segment starts the input (Metaspace's
// "first" prepend scheme).
func (t *Tokenizer) countSegment(s string, atStart bool) (int, error) {
	for _, n := range t.norm {
		s = n(s)
	}
	if s == "" {
		return 0, nil
	}
	pieces := []piece{{s, atStart}}
	for _, p := range t.pre {
		pieces = p(pieces)
	}
	total := 0
	for _, p := range pieces {
		if p.text == "" {
			continue
		}
		n, err := t.model.count(p.text)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// component is one normalizer or pre-tokenizer of tokenizer.json.
type component struct {
	Type string `json:"type"`
	// Sequence
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	// Prepend, Replace, Split
	Prepend string       `json:"prepend"`
	Pattern *jsonPattern `json:"pattern"`
	Content string       `json:"content"`
	// Strip
	StripLeft  bool `json:"strip_left"`
	StripRight bool `json:"strip_right"`
	// ByteLevel, Metaspace
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	Replacement    string `json:"replacement"`
	PrependScheme  string `json:"prepend_scheme"`
	Split          *bool  `json:"split"`
	// Split
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
	// Digits
	IndividualDigits bool `json:"individual_digits"`
}

type jsonPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func parseComponent(raw json.RawMessage) (*component, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrTokenizerUnsupported)
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
