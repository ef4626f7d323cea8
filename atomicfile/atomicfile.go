// Package atomicfile is the one atomic writer of every stage: an output is
// written to a temporary file beside its final path and renamed there only
// when complete, so a failed or interrupted run never leaves a half-written
// file that looks whole.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempMarker is in the name of every temporary file (see IsTemp).
const tempMarker = ".tmp-"

// File is an output being written. Write through it (it is a buffered
// writer), then Commit or Abort.
type File struct {
	*bufio.Writer
	f    *os.File
	path string
}

// Create opens a temporary file beside path, named ".BASE.tmp-*".
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempMarker+"*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{Writer: bufio.NewWriterSize(f, 1<<16), f: f, path: path}, nil
}

// Path is the final path of the file.
func (a *File) Path() string { return a.path }

// Sync flushes the buffer and asks the operating system to put the data on
// disk (for small files that must survive a crash, such as a sweep's
// metadata).
func (a *File) Sync() error {
	if err := a.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// Commit flushes, closes and renames the file into place; on failure the
// temporary file is removed and the final path is left untouched.
func (a *File) Commit() error {
	if err := a.finish(); err != nil {
		return err
	}
	return a.publish()
}

// finish flushes and closes the temporary file, leaving it complete under
// its temporary name; on failure it is removed.
func (a *File) finish() error {
	err := a.Flush()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil { // CreateTemp makes 0600 files; outputs are for sharing
		err = os.Chmod(a.f.Name(), 0o644)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// publish renames the finished file into place.
func (a *File) publish() error {
	if err := os.Rename(a.f.Name(), a.path); err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// CommitAll commits the files of one output as a unit: every file is
// finished (flushed, closed) under its temporary name first, and only when
// all are whole is each renamed into place, in the order given, so a
// failed write (a full disk) leaves every final path as it was. Put the
// file readers check for completeness (a run's summary) last. On failure
// every file not yet renamed is removed.
func CommitAll(files ...*File) error {
	for i, f := range files {
		if err := f.finish(); err != nil {
			for _, g := range files[i+1:] {
				g.Abort()
			}
			for _, g := range files[:i] {
				os.Remove(g.f.Name())
			}
			return err
		}
	}
	for i, f := range files {
		if err := f.publish(); err != nil {
			for _, g := range files[i+1:] {
				os.Remove(g.f.Name())
			}
			return err
		}
	}
	return nil
}

// Abort discards the file.
func (a *File) Abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// Write writes path through fill, atomically.
func Write(path string, fill func(w *bufio.Writer) error) error {
	a, err := Create(path)
	if err != nil {
		return err
	}
	if err := fill(a.Writer); err != nil {
		a.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return a.Commit()
}

// IsTemp reports whether a file name is one of this package's temporary
// files (left behind only by a killed process): ".BASE.tmp-DIGITS", as
// Create names them (os.CreateTemp puts decimal digits for the "*").
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempMarker)
	if i < 2 || name[0] != '.' {
		return false
	}
	digits := name[i+len(tempMarker):]
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// RemoveTemps removes the temporary files of output, a folder or a file
// being written: those beside it named for it (".BASE.tmp-DIGITS") and,
// when it is a folder, every IsTemp file inside it, however deep. It
// returns how many it removed. Call it only while no other process writes
// output (while holding its lock, see package outlock): a temporary file is
// somebody's unfinished write.
func RemoveTemps(output string) (int, error) {
	output = filepath.Clean(output)
	dir, base := filepath.Split(output)
	if dir == "" {
		dir = "."
	}
	n := 0
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, fmt.Errorf("remove temporary files of %s: %w", output, err)
	}
	for _, e := range entries {
		if name := e.Name(); !e.IsDir() && IsTemp(name) && strings.HasPrefix(name, "."+base+tempMarker) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return n, fmt.Errorf("remove temporary file %s: %w", filepath.Join(dir, name), err)
			}
			n++
		}
	}
	if st, err := os.Stat(output); err != nil || !st.IsDir() {
		return n, nil
	}
	err = filepath.WalkDir(output, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && IsTemp(d.Name()) {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("remove temporary files of %s: %w", output, err)
	}
	return n, nil
}
