package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBarDraws: the bar shows the label, the counts and the unit, and ends
// full when the work succeeded.
func TestBarDraws(t *testing.T) {
	for _, tc := range []struct {
		ok   bool
		want string
	}{{true, "simulate 10/10 requests"}, {false, "simulate 4/10 requests"}} {
		var buf bytes.Buffer
		b := Draw(&buf, 100, "simulate", "requests", 10)
		b.Set(2)
		b.Add(2)
		b.Close(tc.ok)
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("ok=%v: output %q lacks %q", tc.ok, buf.String(), tc.want)
		}
	}
}

// TestSilentOffTerminal: on a pipe, a buffer or a regular file there is no
// bar, and the nil bar is safe to use.
func TestSilentOffTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []any{&bytes.Buffer{}, f} {
		var b *Bar
		switch w := w.(type) {
		case *bytes.Buffer:
			b = New(w, "x", "items", 3)
		case *os.File:
			b = New(w, "x", "items", 3)
		}
		if b != nil {
			t.Errorf("%T: a bar off a terminal", w)
		}
		b.Set(1)
		b.Add(1)
		b.Close(true)
	}
	if st, _ := f.Stat(); st.Size() != 0 {
		t.Errorf("%d bytes written to a file", st.Size())
	}
}
