package dataset

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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ftk-dev/ftk/atomicfile"
)

// FileToWrite is one Arrow file of a dataset that Write writes: its
// manifest entry (Write fills in SHA256) and its rows, made by Record when
// the file's turn comes and released after it is written, so that one
// file's columns are in memory at a time.
type FileToWrite struct {
	OutputFile
	Record func() arrow.RecordBatch
}

// Write puts a dataset in dir without ever leaving it looking complete
// while it is not: every file is first written to a temporary file
// (package atomicfile), then the old manifest is removed, the Arrow files
// are renamed into place, stale Arrow files of the previous dataset are
// removed, and manifest.json, m with its Files set from files, comes
// last. dir must be missing, empty, or hold a dataset (Write never writes
// into, or deletes from, a folder of other things). Errors name the file;
// ingest prefixes them with its name.
func Write(dir string, m *Manifest, files []FileToWrite) error {
	if err := prepareDir(dir); err != nil {
		return err
	}
	var pending []*atomicfile.File
	defer func() {
		for _, f := range pending {
			f.Abort() // those not committed: an error happened
		}
	}()
	m.Files = make([]OutputFile, 0, len(files))
	for _, f := range files {
		fh, err := atomicfile.Create(filepath.Join(dir, f.Name))
		if err != nil {
			return err
		}
		pending = append(pending, fh)
		sum, err := writeArrow(fh, f.Record)
		if err != nil {
			return fmt.Errorf("write %s: %w", f.Name, err)
		}
		of := f.OutputFile
		of.SHA256 = sum
		m.Files = append(m.Files, of)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	mpath := filepath.Join(dir, ManifestFile)
	mf, err := atomicfile.Create(mpath)
	if err != nil {
		return err
	}
	pending = append(pending, mf)
	if _, err := mf.Write(append(data, '\n')); err != nil {
		return err
	}

	if err := os.Remove(mpath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
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
			return err
		}
		err := pending[i].Commit()
		pending[i] = nil
		if err != nil {
			return err
		}
	}
	// Arrow files of the dataset being replaced that this one lacks.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && SafeName(n) && !keep[n] {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	err = mf.Commit()
	pending = nil
	return err
}

// prepareDir makes dir, or checks that an existing one is empty or holds a
// dataset.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("output %w", err)
	}
	for _, e := range entries {
		if e.Name() == ManifestFile {
			if !isManifest(filepath.Join(dir, ManifestFile)) {
				return fmt.Errorf("output folder %s: its %s is not an ftk profile dataset manifest: not overwriting it", dir, ManifestFile)
			}
			return nil
		}
	}
	for _, e := range entries {
		if !atomicfile.IsTemp(e.Name()) {
			return fmt.Errorf("output folder %s is not empty and holds no %s: not overwriting it", dir, ManifestFile)
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

// MaxBatchRows is the most samples in one record batch of a dataset file:
// about 30 MB of columns, far under any reader's limit on a batch body.
const MaxBatchRows = 1 << 17

// writeArrow writes the record record makes to w and returns its sha256.
func writeArrow(w io.Writer, record func() arrow.RecordBatch) (string, error) {
	rec := record()
	defer rec.Release()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	aw, err := ipc.NewFileWriter(bw, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return "", err
	}
	// Bounded record batches: a reader holds one batch body in memory, and
	// Arrow readers refuse bodies over 256 MiB (arrow-go's default limit),
	// so one batch per file would make a large dataset unreadable.
	n := rec.NumRows()
	for lo := int64(0); lo == 0 || lo < n; lo += MaxBatchRows {
		part := rec
		if n > MaxBatchRows {
			part = rec.NewSlice(lo, min(lo+MaxBatchRows, n))
			defer part.Release()
		}
		if err := aw.Write(part); err != nil {
			return "", err
		}
	}
	if err := aw.Close(); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
