package ingest

import (
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
// while it is not: everything is written under dir/.tmp-ingest-*, then the
// old manifest is removed, the Arrow files are renamed into place, stale
// files of the previous dataset are removed, and manifest.json comes last.
func (b *build) write(dir string) error {
	if err := prepareDir(dir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-ingest-")
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer os.RemoveAll(tmp)

	m := &b.m
	m.Files = make([]OutputFile, 0, len(b.files))
	for _, f := range b.files {
		sum, err := writeArrow(filepath.Join(tmp, f.name), f, m.Device, b.tab)
		if err != nil {
			return fmt.Errorf("ingest: write %s: %w", f.name, err)
		}
		m.Files = append(m.Files, OutputFile{Name: f.name, Family: string(f.family), Measurement: f.measurement, Rows: len(f.recs), SHA256: sum})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("ingest: manifest: %w", err)
	}
	data = append(data, '\n')
	if err := os.WriteFile(filepath.Join(tmp, ManifestFile), data, 0o644); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}

	mpath := filepath.Join(dir, ManifestFile)
	if err := os.Remove(mpath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ingest: %w", err)
	}
	keep := map[string]bool{}
	for _, f := range m.Files {
		keep[f.Name] = true
		if err := os.Rename(filepath.Join(tmp, f.Name), filepath.Join(dir, f.Name)); err != nil {
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
	if err := os.Rename(filepath.Join(tmp, ManifestFile), mpath); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
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

// writeArrow writes one output file and returns its sha256.
func writeArrow(path string, f *outFile, device string, tab *strTable) (string, error) {
	schema := fileSchema(f, device)
	rec := buildRecord(f, schema, tab)
	defer rec.Release()
	var buf bytes.Buffer
	buf.Grow(1 << 20)
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return "", err
	}
	if err := w.Write(rec); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}
