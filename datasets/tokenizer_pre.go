package datasets

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is a pre-token. atStart is true when it starts the whole input.
type piece struct {
	text    string
	atStart bool
}

// preTokenizer splits pieces into smaller pieces (or rewrites them).
type preTokenizer func([]piece) []piece

// Split delimiter behaviours, as in Hugging Face tokenizers.
const (
	splitIsolated           = "Isolated"
	splitRemoved            = "Removed"
	splitMergedWithPrevious = "MergedWithPrevious"
	splitMergedWithNext     = "MergedWithNext"
	splitContiguous         = "Contiguous"
)

// gpt2Pattern is the pre-tokenizer regex of GPT-2's byte-level BPE, used by
// the ByteLevel pre-tokenizer when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parsePreTokenizer(raw json.RawMessage) ([]preTokenizer, error) {
	c, err := parseComponent(raw)
	if err != nil || c == nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var out []preTokenizer
		for _, r := range c.Pretokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, err
			}
			out = append(out, p...)
		}
		return out, nil
	case "ByteLevel":
		return []preTokenizer{byteLevelPre(boolOr(c.AddPrefixSpace, true), boolOr(c.UseRegex, true))}, nil
	case "Metaspace":
		rep := c.Replacement
		if rep == "" {
			rep = "\u2581"
		}
		scheme := c.PrependScheme
		if scheme == "" {
			scheme = "always"
			if !boolOr(c.AddPrefixSpace, true) {
				scheme = "never"
			}
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return nil, unsupported("Metaspace prepend_scheme %q", scheme)
		}
		return []preTokenizer{metaspacePre(rep, scheme, boolOr(c.Split, true))}, nil
	case "Split":
		switch c.Behavior {
		case splitIsolated, splitRemoved, splitMergedWithPrevious, splitMergedWithNext, splitContiguous:
		default:
			return nil, unsupported("Split behavior %q", c.Behavior)
		}
		var find func(string) [][2]int
		switch {
		case c.Pattern != nil && c.Pattern.String != nil:
			lit := *c.Pattern.String
			if lit == "" {
				return nil, unsupported("Split with an empty pattern")
			}
			find = func(s string) [][2]int { return literalMatches(s, lit) }
		case c.Pattern != nil && c.Pattern.Regex != nil:
			re, err := translateRegex(*c.Pattern.Regex)
			if err != nil {
				return nil, err
			}
			find = re.matches
		default:
			return nil, unsupported("Split pattern is neither String nor Regex")
		}
		behavior, invert := c.Behavior, c.Invert
		return []preTokenizer{func(ps []piece) []piece {
			return splitPieces(ps, func(s string) []span {
				segs := segments(s, find(s))
				if invert {
					for i := range segs {
						segs[i].match = !segs[i].match
					}
				}
				return applySegments(segs, behavior)
			})
		}}, nil
	case "Whitespace":
		re, err := translateRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return nil, err
		}
		return []preTokenizer{func(ps []piece) []piece {
			return splitPieces(ps, func(s string) []span { return applyBehavior(s, re.matches(s), "keep-matches") })
		}}, nil
	case "WhitespaceSplit":
		return []preTokenizer{func(ps []piece) []piece {
			return splitPieces(ps, func(s string) []span {
				return applyBehavior(s, runMatches(s, func(r rune) bool { return !unicode.IsSpace(r) }, false), "keep-matches")
			})
		}}, nil
	case "Digits":
		individual := c.IndividualDigits
		return []preTokenizer{func(ps []piece) []piece {
			return splitPieces(ps, func(s string) []span {
				return applyBehavior(s, runMatches(s, unicode.IsNumber, individual), splitIsolated)
			})
		}}, nil
	}
	return nil, unsupported("pre-tokenizer type %q", c.Type)
}

// span is a byte range of a piece.
type span struct{ start, end int }

// splitPieces replaces each piece by the non-empty spans split returns.
func splitPieces(ps []piece, split func(string) []span) []piece {
	var out []piece
	for _, p := range ps {
		for _, sp := range split(p.text) {
			if sp.end > sp.start {
				out = append(out, piece{p.text[sp.start:sp.end], p.atStart && sp.start == 0})
			}
		}
	}
	return out
}

// seg is a span of a piece, flagged when the pattern matched it.
type seg struct {
	span
	match bool
}

// segments covers s with the matches and the non-empty gaps between them.
func segments(s string, matches [][2]int) []seg {
	var segs []seg
	pos := 0
	for _, m := range matches {
		if m[0] > pos {
			segs = append(segs, seg{span{pos, m[0]}, false})
		}
		segs = append(segs, seg{span{m[0], m[1]}, true})
		pos = m[1]
	}
	if pos < len(s) {
		segs = append(segs, seg{span{pos, len(s)}, false})
	}
	return segs
}

// applyBehavior splits s at the matches of a pattern by behavior.
func applyBehavior(s string, matches [][2]int, behavior string) []span {
	return applySegments(segments(s, matches), behavior)
}

// applySegments turns segments into pieces as Hugging Face's
// SplitDelimiterBehavior does; "keep-matches" keeps only the matches (the
// inverted Removed used by Whitespace).
func applySegments(segs []seg, behavior string) []span {
	var out []span
	switch behavior {
	case splitIsolated:
		for _, g := range segs {
			out = append(out, g.span)
		}
	case splitRemoved, "keep-matches":
		keep := behavior == "keep-matches"
		for _, g := range segs {
			if g.match == keep {
				out = append(out, g.span)
			}
		}
	case splitContiguous:
		prevMatch := false
		for _, g := range segs {
			if g.match && prevMatch && len(out) > 0 {
				out[len(out)-1].end = g.end
			} else {
				out = append(out, g.span)
			}
			prevMatch = g.match
		}
	case splitMergedWithPrevious:
		prevMatch := false
		for _, g := range segs {
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = g.end
			} else {
				out = append(out, g.span)
			}
			prevMatch = g.match
		}
	case splitMergedWithNext:
		prevMatch := false
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = g.start
			} else {
				out = append(out, g.span)
			}
			prevMatch = g.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// literalMatches returns the non-overlapping occurrences of lit in s.
func literalMatches(s, lit string) [][2]int {
	var out [][2]int
	for pos := 0; ; {
		i := strings.Index(s[pos:], lit)
		if i < 0 {
			return out
		}
		out = append(out, [2]int{pos + i, pos + i + len(lit)})
		pos += i + len(lit)
	}
}

// runMatches returns the runs of runes satisfying in (each rune on its own
// when single).
func runMatches(s string, in func(rune) bool, single bool) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		if in(r) {
			if single {
				out = append(out, [2]int{i, i + utf8.RuneLen(r)})
			} else if start < 0 {
				start = i
			}
		} else if start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

// byteLevelPre is Hugging Face's ByteLevel pre-tokenizer: optional prefix
// space, optional GPT-2 regex split, then every byte mapped to its printable
// stand-in character.
func byteLevelPre(addPrefixSpace, useRegex bool) preTokenizer {
	var re *oniRegex
	if useRegex {
		var err error
		if re, err = translateRegex(gpt2Pattern); err != nil {
			panic("datasets: GPT-2 pattern does not translate: " + err.Error())
		}
	}
	return func(ps []piece) []piece {
		var out []piece
		for _, p := range ps {
			s := p.text
			if addPrefixSpace && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			spans := []span{{0, len(s)}}
			if re != nil {
				spans = applyBehavior(s, re.matches(s), splitIsolated)
			}
			for _, sp := range spans {
				if sp.end > sp.start {
					out = append(out, piece{byteLevelMap(s[sp.start:sp.end]), p.atStart && sp.start == 0})
				}
			}
		}
		return out
	}
}

// byteToRune is GPT-2's bytes_to_unicode table: printable Latin-1 bytes map
// to themselves, the others to U+0100 onwards in byte order.
var byteToRune = func() (t [256]rune) {
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			t[b] = rune(b)
		} else {
			t[b] = rune(256 + n)
			n++
		}
	}
	return t
}()

func byteLevelMap(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// metaspacePre is Hugging Face's Metaspace pre-tokenizer: spaces become the
// replacement character, which is prepended by the scheme, and the text is
// split before each replacement character.
func metaspacePre(rep, scheme string, split bool) preTokenizer {
	return func(ps []piece) []piece {
		var out []piece
		for _, p := range ps {
			s := strings.ReplaceAll(p.text, " ", rep)
			if !strings.HasPrefix(s, rep) && (scheme == "always" || (scheme == "first" && p.atStart)) {
				s = rep + s
			}
			if !split {
				out = append(out, piece{s, p.atStart})
				continue
			}
			for _, sp := range applyBehavior(s, literalMatches(s, rep), splitMergedWithNext) {
				if sp.end > sp.start {
					out = append(out, piece{s[sp.start:sp.end], p.atStart && sp.start == 0})
				}
			}
		}
		return out
	}
}

// Unicode classes of Oniguruma's \s, \w and \d, for RE2.
const (
	wsClass    = `\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`
	wordClass  = `\p{L}\p{M}\p{Nd}\p{Pc}`
	digitClass = `\p{Nd}`
	// lookWS is the one look-ahead the pre-tokenizer patterns use; it must
	// end the pattern as `\s+(?!\S)|\s+`.
	lookWS     = `\s+(?!\S)`
	lookWSTail = `\s+(?!\S)|\s+`
)

// oniRegex is an Oniguruma pattern translated to RE2. lookWS is the
// submatch index of the emulated `\s+(?!\S)`, or -1.
type oniRegex struct {
	re     *regexp.Regexp
	lookWS int
}

// translateRegex translates an Oniguruma pattern of a tokenizer.json to
// RE2: \s \w \d (and negations) get their Unicode meaning, \uHHHH becomes
// \x{HHHH}, and a trailing `\s+(?!\S)|\s+` becomes a marked group whose
// matches are shortened by one character when followed by a non-space,
// which is what the look-ahead does.
func translateRegex(p string) (*oniRegex, error) {
	var b strings.Builder
	inClass := false
	hasLook := false
	class := func(e byte) string {
		switch e | 0x20 {
		case 's':
			return wsClass
		case 'w':
			return wordClass
		}
		return digitClass
	}
	for i := 0; i < len(p); {
		if !inClass && strings.HasPrefix(p[i:], lookWS) {
			if p[i:] != lookWSTail {
				return nil, unsupported("regex %q: look-ahead other than a final `\\s+(?!\\S)|\\s+`", p)
			}
			b.WriteString(`(?P<ftklookws>[` + wsClass + `]+)`)
			hasLook = true
			i = len(p)
			continue
		}
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			e := p[i+1]
			switch e {
			case 's', 'w', 'd':
				if inClass {
					b.WriteString(class(e))
				} else {
					b.WriteString("[" + class(e) + "]")
				}
				i += 2
			case 'S', 'W', 'D':
				if inClass {
					return nil, unsupported("regex %q: \\%c inside a character class", p, e)
				}
				b.WriteString("[^" + class(e) + "]")
				i += 2
			case 'u':
				if i+6 > len(p) {
					return nil, unsupported("regex %q: bad \\u escape", p)
				}
				b.WriteString(`\x{` + p[i+2:i+6] + `}`)
				i += 6
			default:
				b.WriteString(p[i : i+2])
				i += 2
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			i++
			if i < len(p) && p[i] == '^' {
				b.WriteByte('^')
				i++
			}
			if i < len(p) && p[i] == ']' {
				b.WriteString(`\]`)
				i++
			}
		case c == '[' && inClass && strings.HasPrefix(p[i:], "[:"):
			j := strings.Index(p[i:], ":]")
			if j < 0 {
				return nil, unsupported("regex %q: unterminated [: class", p)
			}
			b.WriteString(p[i : i+j+2])
			i += j + 2
		case c == '[' && inClass:
			return nil, unsupported("regex %q: nested character class", p)
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, unsupported("regex %q does not translate to RE2: %v", p, err)
	}
	o := &oniRegex{re: re, lookWS: -1}
	if hasLook {
		o.lookWS = re.SubexpIndex("ftklookws")
	}
	return o, nil
}

// matches returns the successive leftmost-first matches of the pattern in
// s, with the look-ahead emulated.
func (o *oniRegex) matches(s string) [][2]int {
	var out [][2]int
	for pos := 0; pos < len(s); {
		loc := o.re.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if o.lookWS >= 0 && loc[2*o.lookWS] >= 0 && end < len(s) {
			// \s+(?!\S): a whitespace run followed by a non-space gives
			// back its last character (if it keeps at least one).
			if r, _ := utf8.DecodeRuneInString(s[end:]); !unicode.IsSpace(r) {
				if _, size := utf8.DecodeLastRuneInString(s[start:end]); end-size > start {
					end -= size
				}
			}
		}
		if end == start {
			_, size := utf8.DecodeRuneInString(s[start:])
			pos = start + size
			continue
		}
		out = append(out, [2]int{start, end})
		pos = end
	}
	return out
}
