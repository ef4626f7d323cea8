package ingest

import (
	"path/filepath"
	"testing"
	"time"
)

func TestZZTiming(t *testing.T) {
	root := profilesDir(t)
	for it := 0; it < 3; it++ {
		var tr, tw time.Duration
		for _, s := range deviceSets {
			t0 := time.Now()
			b, err := read([]string{filepath.Join(root, s)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t1 := time.Now()
			if err := b.write(filepath.Join(t.TempDir(), s)); err != nil {
				t.Fatal(err)
			}
			tr += t1.Sub(t0)
			tw += time.Since(t1)
		}
		t.Logf("read %v write %v", tr, tw)
	}
}
