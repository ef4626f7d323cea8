package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAppenderResumesAndCutsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.csv")
	header := []string{"time_stats.op.median", "shape_id"}
	a, ex, err := openAppender(path, header)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.done) != 0 || ex.rows != 0 {
		t.Fatalf("new file: %+v", ex)
	}
	for _, id := range []string{"a", "b", "c,d"} {
		if err := a.Append([]string{"0.1", id}); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("0.2,e") // a row cut by a crash: no newline
	f.Close()
	a, ex, err = openAppender(path, header)
	if err != nil {
		t.Fatal(err)
	}
	if ex.rows != 3 || !ex.done["a"] || !ex.done["c,d"] || ex.done["e"] || ex.tornTail != 5 {
		t.Fatalf("resume: %+v", ex)
	}
	a.Append([]string{"0.3", "e"})
	a.Close()
	data, _ := os.ReadFile(path)
	if want := "time_stats.op.median,shape_id\n0.1,a\n0.1,b\n0.1,\"c,d\"\n0.3,e\n"; string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
}

func TestAppenderRejectsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	header := []string{"a", "shape_id"}
	for _, tc := range []struct{ content, want string }{
		{"x,shape_id\n1,2\n", "columns differ"},
		{"a,shape_id\n1,2\n1,2,3\n", "line 3"},
	} {
		path := filepath.Join(dir, "f.csv")
		os.WriteFile(path, []byte(tc.content), 0o644)
		_, _, err := openAppender(path, header)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want one naming %s and %q", tc.content, err, path, tc.want)
		}
	}
}
