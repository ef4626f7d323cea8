package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// csvError is a malformed CSV record: the 1-based field where it went wrong
// and what was wrong.
type csvError struct {
	field int
	msg   string
}

// msgUnterminated is the csvError of a quote that is never closed: the
// rest of the file is one broken field, so the file cannot be read.
const msgUnterminated = "unterminated quoted field"

func (e *csvError) Error() string { return fmt.Sprintf("field %d: %s", e.field, e.msg) }

// parseRecord splits the CSV record at the start of data into fields,
// appending them to fields[:0]. Fields are sub-slices of data; a quoted
// field with doubled quotes is unescaped in place, so data is modified.
// It returns the fields, the bytes consumed (through the record's line
// ending) and the number of line feeds consumed. A trailing carriage return
// before the line feed is dropped. On a malformed record it returns a
// *csvError and consumes through the end of the offending line (or of the
// data, for an unterminated quote) so that scanning can go on.
func parseRecord(data []byte, fields [][]byte) ([][]byte, int, int, error) {
	fields = fields[:0]
	i, lines := 0, 0
	lineEnd := -1 // index of the '\n' ending the current line, len(data) if none; -1 unknown
	for {
		if i < len(data) && data[i] == '"' {
			// Quoted field: runs to the next quote not followed by another.
			start := i + 1
			w, j := start, start
			for {
				k := bytes.IndexByte(data[j:], '"')
				if k < 0 {
					lines += bytes.Count(data[j:], nl)
					return fields, len(data), lines, &csvError{len(fields) + 1, msgUnterminated}
				}
				lines += bytes.Count(data[j:j+k], nl)
				if w != j {
					copy(data[w:], data[j:j+k])
				}
				w += k
				j += k
				if j+1 < len(data) && data[j+1] == '"' {
					data[w] = '"'
					w++
					j += 2
					continue
				}
				break
			}
			fields = append(fields, data[start:w])
			j++ // past the closing quote
			switch {
			case j == len(data):
				return fields, j, lines, nil
			case data[j] == ',':
				i = j + 1
				lineEnd = -1
				continue
			case data[j] == '\n':
				return fields, j + 1, lines + 1, nil
			case data[j] == '\r' && j+1 == len(data):
				return fields, j + 1, lines, nil
			case data[j] == '\r' && data[j+1] == '\n':
				return fields, j + 2, lines + 1, nil
			}
			n, l := skipLine(data, j)
			return fields, n, lines + l, &csvError{len(fields), "text after the closing quote of a quoted field"}
		}
		if lineEnd < i {
			if k := bytes.IndexByte(data[i:], '\n'); k >= 0 {
				lineEnd = i + k
			} else {
				lineEnd = len(data)
			}
		}
		if k := bytes.IndexByte(data[i:lineEnd], ','); k >= 0 {
			fields = append(fields, data[i:i+k])
			i += k + 1
			continue
		}
		f := data[i:lineEnd]
		if len(f) > 0 && f[len(f)-1] == '\r' {
			f = f[:len(f)-1]
		}
		fields = append(fields, f)
		if lineEnd == len(data) {
			return fields, lineEnd, lines, nil
		}
		return fields, lineEnd + 1, lines + 1, nil
	}
}

var nl = []byte{'\n'}

// skipLine returns the offset just past the line feed at or after j (or
// len(data)) and the line feeds passed.
func skipLine(data []byte, j int) (int, int) {
	if k := bytes.IndexByte(data[j:], '\n'); k >= 0 {
		return j + k + 1, 1
	}
	return len(data), 0
}

// scanner reads CSV records from a byte slice it owns (it may modify it).
type scanner struct {
	data   []byte
	pos    int
	line   int // 1-based line of data[pos]
	fields [][]byte
}

func newScanner(data []byte) *scanner {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
	return &scanner{data: data, line: 1, fields: make([][]byte, 0, 64)}
}

// next returns the next record that is not an empty line, and the line it
// starts on. The fields are valid until the next call. At the end of the
// data it returns io.EOF; a malformed record returns a *csvError, after
// which scanning can go on.
func (s *scanner) next() ([][]byte, int, error) {
	for s.pos < len(s.data) {
		line := s.line
		fields, n, lines, err := parseRecord(s.data[s.pos:], s.fields)
		s.fields = fields
		s.pos += n
		s.line += lines
		if err != nil {
			return nil, line, err
		}
		if len(fields) == 1 && len(fields[0]) == 0 {
			continue // blank line
		}
		return fields, line, nil
	}
	return nil, s.line, io.EOF
}

// Cell parsing. Each parser trims ASCII blanks; errBlank reports an empty
// cell so callers can tell "not measured" from "malformed".

var errBlank = errors.New("blank cell")

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseFloat parses a decimal number. NaN and infinities parse (the
// validation reports them); anything else that is not a number is an error.
func parseFloat(b []byte) (float64, error) {
	b = trimSpace(b)
	if len(b) == 0 {
		return 0, errBlank
	}
	if v, ok := parseSimpleFloat(b); ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, nil // overflow to ±Inf or underflow to 0: a number all the same
		}
		return 0, fmt.Errorf("%q is not a number", b)
	}
	return v, nil
}

// pow10 holds the exactly representable powers of ten.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseSimpleFloat is the exact fast path for plain decimals ([-]d*[.d*])
// whose significant digits make an integer below 2^53 with at most 22
// digits after the point: the mantissa is exact in a float64 and so is the
// power of ten, so one division is correctly rounded, as strconv would
// give. Anything else returns false.
func parseSimpleFloat(b []byte) (float64, bool) {
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
	}
	// mant stays below 2^53 (else strconv), so mant*10+d cannot overflow.
	var mant uint64
	i := 0
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		if mant >= 1<<53 {
			return 0, false
		}
		mant = mant*10 + uint64(d)
	}
	digits, frac := i, 0
	if i < len(b) {
		if b[i] != '.' {
			return 0, false
		}
		i++
		start := i
		for ; i < len(b); i++ {
			d := b[i] - '0'
			if d > 9 || mant >= 1<<53 {
				return 0, false
			}
			mant = mant*10 + uint64(d)
		}
		frac = i - start
	}
	if mant >= 1<<53 || frac >= len(pow10) || digits+frac == 0 {
		return 0, false
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// parseBool accepts Python's True/False, lower-case true/false and 1/0.
func parseBool(b []byte) (bool, error) {
	b = trimSpace(b)
	switch string(b) {
	case "True", "true", "TRUE", "1", "1.0":
		return true, nil
	case "False", "false", "FALSE", "0", "0.0":
		return false, nil
	case "":
		return false, errBlank
	}
	return false, fmt.Errorf("%q is not a boolean (True/False)", b)
}

// parseIntList parses a stringified Python list of integers such as
// "[16, 16]" (elements may be written 16.0), appending to dst[:0].
func parseIntList(b []byte, dst []int) ([]int, error) {
	dst = dst[:0]
	b = trimSpace(b)
	if len(b) == 0 {
		return dst, errBlank
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return dst, fmt.Errorf("%q is not a list such as [16, 16]", b)
	}
	body := trimSpace(b[1 : len(b)-1])
	if len(body) == 0 {
		return dst, nil
	}
	for len(body) > 0 {
		var e []byte
		if k := bytes.IndexByte(body, ','); k >= 0 {
			e, body = body[:k], body[k+1:]
		} else {
			e, body = body, nil
		}
		v, err := parseFloat(e)
		if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return dst, fmt.Errorf("%q is not a list of integers", b)
		}
		dst = append(dst, int(v))
	}
	return dst, nil
}
