package simulate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// atomicFile is an output written to a temporary file beside its final
// path and renamed there only when complete, so a failed run never leaves
// a half-written file that looks whole.
type atomicFile struct {
	f    *os.File
	w    *bufio.Writer
	path string
}

func createAtomic(path string) (*atomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &atomicFile{f: f, w: bufio.NewWriterSize(f, 1<<16), path: path}, nil
}

// commit flushes, closes and renames the file into place.
func (a *atomicFile) commit() error {
	err := a.w.Flush()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil { // CreateTemp makes 0600 files; outputs are for sharing
		err = os.Chmod(a.f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// abort discards the file.
func (a *atomicFile) abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// writeFileAtomic writes path through fill, atomically.
func writeFileAtomic(path string, fill func(w io.Writer) error) error {
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	if err := fill(a.w); err != nil {
		a.abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return a.commit()
}
