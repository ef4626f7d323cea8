package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// write puts the dataset in dir without ever leaving it looking complete
// while it is not: every file is first written as dir/.tmp-ingest-*.part,
// then the old manifest is removed, the Arrow files are renamed into
// place, stale Arrow files of the previous dataset are removed, and
// manifest.json comes last.
func (b *build) write(dir string) error {
	if err := prepareDir(dir); err != nil {
		return err
	}
	var temps []string
	defer func() {
		for _, t := range temps {
			os.Remove(t) // those not renamed: an error happened
		}
	}()
	create := func() (*os.File, error) {
		fh, err := os.CreateTemp(dir, ".tmp-ingest-*.part")
		if err != nil {
			return nil, err
		}
		temps = append(temps, fh.Name())
		// CreateTemp makes 0600 files; a dataset is for sharing.
		return fh, fh.Chmod(0o644)
	}

	m := &b.m
	m.Files = make([]OutputFile, 0, len(b.files))
	for _, f := range b.files {
		fh, err := create()
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		sum, err := writeArrow(fh, f, b)
		if err != nil {
			return fmt.Errorf("ingest: write %s: %w", f.name, err)
		}
		m.Files = append(m.Files, OutputFile{Name: f.name, Family: string(f.family), Measurement: f.measurement, Rows: len(f.recs), SHA256: sum})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("ingest: manifest: %w", err)
	}
	mf, err := create()
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	_, err = mf.Write(append(data, '\n'))
	if cerr := mf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}

	mpath := filepath.Join(dir, ManifestFile)
	if err := os.Remove(mpath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ingest: %w", err)
	}
	keep := map[string]bool{}
	for i, f := range m.Files {
		keep[f.Name] = true
		// Removing the old file first makes the rename a plain one: a
		// rename over an existing file makes some file systems (ext4's
		// auto_da_alloc) flush the new file's data at once. The dataset
		// has no manifest meanwhile, so it does not look complete.
		p := filepath.Join(dir, f.Name)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ingest: %w", err)
		}
		if err := os.Rename(temps[i], p); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
	}
	// Arrow files of the dataset being replaced that this one lacks.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && safeName(n) && !keep[n] {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("ingest: %w", err)
			}
		}
	}
	if err := os.Rename(temps[len(temps)-1], mpath); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	temps = nil
	return nil
}

// prepareDir makes dir, or checks that an existing one is empty or holds a
// dataset (so ingest never writes into, or deletes from, a folder of other
// things).
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("ingest: output %w", err)
	}
	for _, e := range entries {
		if e.Name() == ManifestFile {
			if !isManifest(filepath.Join(dir, ManifestFile)) {
				return fmt.Errorf("ingest: output folder %s: its %s is not an ftk profile dataset manifest: not overwriting it", dir, ManifestFile)
			}
			return nil
		}
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".tmp-ingest-") {
			return fmt.Errorf("ingest: output folder %s is not empty and holds no %s: not overwriting it", dir, ManifestFile)
		}
	}
	return nil
}

// isManifest reports whether the file starts like a dataset manifest (its
// first key is the kind).
func isManifest(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 128)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte(`"kind": "`+ManifestKind+`"`))
}

// safeName reports whether a manifest file name is a plain Arrow file name
// in the dataset folder.
func safeName(n string) bool {
	return strings.HasSuffix(n, ".arrow") && !strings.ContainsAny(n, `/\`) && n != "." && n != ".."
}

// writeArrow writes one output file to fh, closes it and returns its
// sha256.
func writeArrow(fh *os.File, f *outFile, b *build) (string, error) {
	defer fh.Close()
	schema := fileSchema(f, b.m.Device, b.tab)
	rec := buildRecord(f, schema, b)
	defer rec.Release()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(fh, h), 64<<10)
	w, err := ipc.NewFileWriter(bw, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return "", err
	}
	if err := w.Write(rec); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := fh.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
