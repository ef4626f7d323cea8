package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/spec"
)

// KernelTables ingests an AIConfigurator database (a <gpu> folder,
// kerneldb's layout): it reads every row of every table ftk prices, in
// every vLLM version folder, and writes into dst a copy of those table
// families (parquet files byte for byte, collection_meta.yaml and
// reuse.yaml), the GPU's system YAML as system.yaml, and
// kernel_tables.json, the manifest (rows, devices, kernel sources and
// sha256 of every file; the tables not priced). The copy appears whole
// or not at all: it is built beside dst and renamed into place. dst must
// not exist, be empty or hold an earlier copy (replaced).
func KernelTables(src, dst string) (*kerneldb.Manifest, error) {
	db, err := kerneldb.Open(src)
	if err != nil {
		return nil, err
	}
	if err := checkKernelDst(dst); err != nil {
		return nil, err
	}
	m := &kerneldb.Manifest{Kind: kerneldb.ManifestKind, Source: src, GPU: db.GPU}
	if d, err := spec.LookupDevice(deviceGuess(db.GPU)); err == nil {
		m.Device = d.Name
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dst)), "."+filepath.Base(dst)+".ingest-")
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	defer os.RemoveAll(tmp)
	copied := map[string]bool{}
	for _, e := range db.Entries {
		if _, ok := kerneldb.Priced(e.Table); !ok {
			m.Skipped = append(m.Skipped, e.Family+"/"+e.Table)
			continue
		}
		vdir := filepath.Join(e.Family, kerneldb.Framework, e.Version)
		if !copied[vdir] {
			if err := copyDir(filepath.Join(db.Dir, vdir), filepath.Join(tmp, vdir)); err != nil {
				return nil, err
			}
			copied[vdir] = true
		}
		mt := kerneldb.ManifestTable{Family: e.Family, Table: e.Table, Version: e.Version, From: e.From}
		if e.Path != "" {
			t, err := kerneldb.ReadTable(e.Path)
			if err != nil {
				return nil, err
			}
			mt.File = filepath.ToSlash(filepath.Join(vdir, filepath.Base(e.Path)))
			mt.Rows, mt.KernelSources = t.Rows, t.KernelSources()
			for d := range t.Devices() {
				mt.Devices = append(mt.Devices, d)
			}
			sort.Strings(mt.Devices)
			if mt.SHA256, err = fileSHA256(e.Path); err != nil {
				return nil, err
			}
			if m.Device == "" && len(mt.Devices) == 1 {
				if d, err := spec.LookupDevice(mt.Devices[0]); err == nil {
					m.Device = d.Name
				}
			}
		}
		m.Tables = append(m.Tables, mt)
	}
	m.Skipped = dedupe(m.Skipped)
	if len(m.Tables) == 0 {
		return nil, fmt.Errorf("ingest: %s has none of the tables ftk prices", src)
	}
	if db.System != nil {
		if err := copyFile(db.System.Path, filepath.Join(tmp, kerneldb.SystemFile)); err != nil {
			return nil, err
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, kerneldb.ManifestFile), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	old := ""
	if _, err := os.Stat(dst); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dst, old); err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if old != "" {
			_ = os.Rename(old, dst)
		}
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return m, nil
}

// deviceGuess turns a database folder name (h100_sxm, l40s) into a name
// the device catalog may know.
func deviceGuess(gpu string) string {
	return strings.TrimSuffix(strings.TrimSuffix(gpu, "_sxm"), "-sxm")
}

func checkKernelDst(dst string) error {
	es, err := os.ReadDir(dst)
	if os.IsNotExist(err) || err == nil && len(es) == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if _, err := kerneldb.ReadManifest(dst); err != nil {
		return fmt.Errorf("ingest: %s holds files that are not an earlier kernel-table copy: give an empty or new folder", dst)
	}
	return nil
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func copyDir(src, dst string) error {
	es, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	for _, e := range es {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("ingest: copying %s: %w", src, err)
	}
	return out.Close()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteKernelReport prints what KernelTables read, one line a table file.
func WriteKernelReport(w io.Writer, dst string, m *kerneldb.Manifest) {
	dev := m.Device
	if dev == "" {
		dev = "not in ftk's device catalog"
	}
	fmt.Fprintf(w, "ingest: AIConfigurator kernel tables of %s (device %s) -> %s\n", m.GPU, dev, dst)
	rows := 0
	for _, t := range m.Tables {
		if t.From != "" {
			fmt.Fprintf(w, "  %-28s vLLM %-8s borrowed from %s (reuse.yaml)\n", t.Table, t.Version, t.From)
			continue
		}
		var srcs []string
		for s, n := range t.KernelSources {
			srcs = append(srcs, fmt.Sprintf("%s %d", s, n))
		}
		sort.Strings(srcs)
		fmt.Fprintf(w, "  %-28s vLLM %-8s %7d rows  kernels: %s\n", t.Table, t.Version, t.Rows, strings.Join(srcs, ", "))
		rows += t.Rows
	}
	fmt.Fprintf(w, "  %d rows read in %d table files", rows, len(m.Tables))
	if len(m.Skipped) > 0 {
		fmt.Fprintf(w, "; not priced by ftk (not read): %s", strings.Join(m.Skipped, ", "))
	}
	fmt.Fprintln(w)
}
