package ingest

import (
	"path/filepath"
	"testing"
)

func BenchmarkZZWrite(b *testing.B) {
	root := profilesDir(b)
	var bs []*build
	for _, s := range deviceSets {
		x, err := read([]string{filepath.Join(root, s)}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		bs = append(bs, x)
	}
	out := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, x := range bs {
			if err := x.write(filepath.Join(out, deviceSets[j])); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkZZRead(b *testing.B) {
	root := profilesDir(b)
	for i := 0; i < b.N; i++ {
		for _, s := range deviceSets {
			if _, err := read([]string{filepath.Join(root, s)}, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
