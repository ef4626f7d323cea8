package ingest

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		fields []string
		n      int // bytes consumed
		lines  int
		err    string
	}{
		{"plain", "a,b,c\nnext", []string{"a", "b", "c"}, 6, 1, ""},
		{"crlf", "a,b\r\nnext", []string{"a", "b"}, 5, 1, ""},
		{"no newline", "1,2.5,", []string{"1", "2.5", ""}, 6, 0, ""},
		{"blank cells", ",,x,\n", []string{"", "", "x", ""}, 5, 1, ""},
		{"python list", `1,"[16, 16]",True` + "\n", []string{"1", "[16, 16]", "True"}, 18, 1, ""},
		{"escaped quote", `"say ""hi""",2` + "\n", []string{`say "hi"`, "2"}, 15, 1, ""},
		{"quoted newline", "\"a\nb\",c\n", []string{"a\nb", "c"}, 8, 2, ""},
		{"quoted crlf end", "\"x\"\r\n", []string{"x"}, 5, 1, ""},
		{"empty line", "\n", []string{""}, 1, 1, ""},
		{"lone cr kept inside", "a\rb,c\n", []string{"a\rb", "c"}, 6, 1, ""},
		{"unterminated quote", "\"abc,d\n", nil, 7, 1, "unterminated quoted field"},
		{"text after quote", "\"a\"b,c\nnext", nil, 7, 1, "text after the closing quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, n, lines, err := parseRecord([]byte(tc.in), nil)
			if tc.err != "" {
				var ce *csvError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if got := strs(fields); strings.Join(got, "|") != strings.Join(tc.fields, "|") || len(got) != len(tc.fields) {
				t.Errorf("fields %q, want %q", got, tc.fields)
			}
			if n != tc.n || lines != tc.lines {
				t.Errorf("consumed %d bytes, %d lines; want %d, %d", n, lines, tc.n, tc.lines)
			}
		})
	}
}

func strs(fields [][]byte) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = string(f)
	}
	return out
}

func TestScannerLinesAndBOM(t *testing.T) {
	sc := newScanner([]byte("\xef\xbb\xbfh1,h2\r\n\r\n1,\"x\ny\"\r\n2,3"))
	var got []string
	for {
		f, line, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strconv.Itoa(line)+":"+strings.Join(strs(f), "|"))
	}
	want := []string{"1:h1|h2", "3:1|x\ny", "5:2|3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("records %q, want %q", got, want)
	}
}

func TestParseFloat(t *testing.T) {
	for _, in := range []string{"0", "1", "-1", "0.0167999994009733", "0.010463999584317207", "1.5676739660947454e-05",
		"123456789012345", "1234567890123456789", ".5", "1.", "-0.25", " 2.5 ", "1e308", "0.1", "0.3", "4096.0",
		"0.000000000000000000000001", "9007199254740993", "2.2250738585072014e-308"} {
		got, err := parseFloat([]byte(in))
		want, werr := strconv.ParseFloat(strings.TrimSpace(in), 64)
		if err != nil || werr != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("parseFloat(%q) = %v, %v; strconv gives %v, %v", in, got, err, want, werr)
		}
	}
	for _, in := range []string{"abc", "1,5", "--1", "1e", "-", "."} {
		if _, err := parseFloat([]byte(in)); err == nil || errors.Is(err, errBlank) {
			t.Errorf("parseFloat(%q) accepted", in)
		}
	}
	if _, err := parseFloat([]byte("  ")); !errors.Is(err, errBlank) {
		t.Errorf("blank cell: %v", err)
	}
	if v, err := parseFloat([]byte("nan")); err != nil || !math.IsNaN(v) {
		t.Errorf("nan parses as a number for the validation to reject: %v %v", v, err)
	}
}

func TestParseIntListAndBool(t *testing.T) {
	l, err := parseIntList([]byte("[1024, 16.0,3]"), nil)
	if err != nil || len(l) != 3 || l[0] != 1024 || l[1] != 16 || l[2] != 3 {
		t.Errorf("list %v %v", l, err)
	}
	if l, err := parseIntList([]byte("[]"), nil); err != nil || len(l) != 0 {
		t.Errorf("empty list %v %v", l, err)
	}
	for _, bad := range []string{"16, 16", "[1.5]", "[a]", "[1,,2]"} {
		if _, err := parseIntList([]byte(bad), nil); err == nil {
			t.Errorf("list %q accepted", bad)
		}
	}
	for in, want := range map[string]bool{"True": true, "False": false, "true": true, "0": false, "1.0": true} {
		if got, err := parseBool([]byte(in)); err != nil || got != want {
			t.Errorf("parseBool(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := parseBool([]byte("yes")); err == nil {
		t.Error("parseBool accepted yes")
	}
}

// FuzzParseRow checks that the record parser never panics, always makes
// progress, and that writing its fields back as CSV and parsing again gives
// the same fields. Run: go test -run '^$' -fuzz FuzzParseRow -fuzztime 20s ./ingest/
func FuzzParseRow(f *testing.F) {
	for _, s := range []string{
		"a,b,c\n", "1,\"[16, 16]\",True\r\n", "\"x\"\"y\",\n", ",,,", "\"open", "\"a\"b", "\r\n", "",
		"0.0167999994009733,0.0205119997262954,,even,[1]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		data := append([]byte(nil), in...) // the parser unescapes in place
		fields, n, lines, err := parseRecord(data, nil)
		if len(in) > 0 && (n <= 0 || n > len(in)) {
			t.Fatalf("consumed %d of %d bytes", n, len(in))
		}
		if lines < 0 || lines > bytes.Count(in[:n], nl) {
			t.Fatalf("%d lines in %d bytes with %d line feeds", lines, n, bytes.Count(in[:n], nl))
		}
		if err != nil {
			return
		}
		got := strs(fields)
		enc := encodeRecord(got)
		again, m, _, err := parseRecord([]byte(enc), nil)
		if err != nil || m != len(enc) {
			t.Fatalf("re-parse of %q: consumed %d of %d, %v", enc, m, len(enc), err)
		}
		if back := strs(again); strings.Join(back, "\x00") != strings.Join(got, "\x00") || len(back) != len(got) {
			t.Fatalf("round trip %q -> %q -> %q", got, enc, back)
		}
		for _, fld := range fields {
			parseFloat(fld)
			parseBool(fld)
			parseIntList(fld, nil)
		}
	})
}

// encodeRecord writes fields as one CSV record: quoted when needed, the
// line ending \n.
func encodeRecord(fields []string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		if f == "" && len(fields) == 1 {
			b.WriteString(`""`) // a lone empty field would read as a blank line
			continue
		}
		if strings.ContainsAny(f, ",\"\r\n") {
			b.WriteString(`"` + strings.ReplaceAll(f, `"`, `""`) + `"`)
		} else {
			b.WriteString(f)
		}
	}
	b.WriteByte('\n')
	return b.String()
}
