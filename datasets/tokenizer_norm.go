package datasets

import (
	"encoding/json"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a segment of text before pre-tokenization.
type normalizer func(string) string

func parseNormalizer(raw json.RawMessage) ([]normalizer, error) {
	c, err := parseComponent(raw)
	if err != nil || c == nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var out []normalizer
		for _, r := range c.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			out = append(out, n...)
		}
		return out, nil
	case "NFC":
		return []normalizer{norm.NFC.String}, nil
	case "NFD":
		return []normalizer{norm.NFD.String}, nil
	case "NFKC":
		return []normalizer{norm.NFKC.String}, nil
	case "NFKD":
		return []normalizer{norm.NFKD.String}, nil
	case "Lowercase":
		return []normalizer{strings.ToLower}, nil
	case "Prepend":
		p := c.Prepend
		return []normalizer{func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}}, nil
	case "Replace":
		if c.Pattern == nil {
			return nil, unsupported("Replace without a pattern")
		}
		content := c.Content
		if c.Pattern.String != nil {
			old := *c.Pattern.String
			return []normalizer{func(s string) string { return strings.ReplaceAll(s, old, content) }}, nil
		}
		if c.Pattern.Regex == nil {
			return nil, unsupported("Replace pattern is neither String nor Regex")
		}
		re, err := translateRegex(*c.Pattern.Regex)
		if err != nil {
			return nil, err
		}
		if re.lookWS >= 0 {
			return nil, unsupported(`Replace regex with a look-ahead`)
		}
		return []normalizer{func(s string) string { return re.re.ReplaceAllLiteralString(s, content) }}, nil
	case "Strip":
		left, right := c.StripLeft, c.StripRight
		return []normalizer{func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}}, nil
	}
	return nil, unsupported("normalizer type %q", c.Type)
}
