package kerneldb

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ManifestFile is the manifest ftk ingest writes into its copy of a
// database.
const ManifestFile = "kernel_tables.json"

// ManifestKind marks a kernel-table manifest.
const ManifestKind = "aiconfigurator_kernel_tables"

// Manifest records what ftk ingest read from a database: every table file
// with its rows, kernel sources and checksum, the tables it does not
// price, and the device.
type Manifest struct {
	Kind   string          `json:"kind"`
	Source string          `json:"source"`
	GPU    string          `json:"gpu"`
	Device string          `json:"device"` // ftk's catalog name ("" when the catalog lacks it)
	Tables []ManifestTable `json:"tables"`
	// Skipped lists tables ftk does not price, by family/table.
	Skipped []string `json:"not_priced,omitempty"`
}

// ManifestTable is one table file of one version folder.
type ManifestTable struct {
	Family        string         `json:"family"`
	Table         string         `json:"table"`
	Version       string         `json:"version"`
	File          string         `json:"file,omitempty"` // relative to the copy
	From          string         `json:"reused_from,omitempty"`
	Rows          int            `json:"rows,omitempty"`
	SHA256        string         `json:"sha256,omitempty"`
	Devices       []string       `json:"devices,omitempty"`
	KernelSources map[string]int `json:"kernel_sources,omitempty"`
}

// ReadManifest reads dir's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Kind != ManifestKind {
		return nil, fmt.Errorf("%s: kind %q, want %q", filepath.Join(dir, ManifestFile), m.Kind, ManifestKind)
	}
	return &m, nil
}
