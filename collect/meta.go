package collect

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/spec"
	"go.yaml.in/yaml/v3"
)

// MetaFile is the name of the YAML that describes a sweep folder.
const MetaFile = "ftk-collect.yaml"

// MetaSchemaVersion is the version of MetaFile's schema.
const MetaSchemaVersion = 1

// Meta is ftk-collect.yaml: what a sweep folder holds and how it was
// measured. Readers (ftk ingest) use it to label rows and to refuse
// merging shards that disagree on device, model or timing method.
type Meta struct {
	SchemaVersion     int    `yaml:"schema_version"`
	Tool              string `yaml:"tool"`
	FTKVersion        string `yaml:"ftk_version"`
	Device            string `yaml:"device"`
	DeviceDescription string `yaml:"device_description"`
	Model             string `yaml:"model"`
	ModelArchitecture string `yaml:"model_architecture"`
	// Backend is synthetic or torch; Synthetic repeats it as a flag so no
	// reader mistakes a model for a measurement.
	Backend   string `yaml:"backend"`
	Synthetic bool   `yaml:"synthetic"`
	Precision string `yaml:"precision"`
	// Measurements are the measurement types of the CSV files in the
	// folder (HOST_WALL for cpu_overhead.csv).
	Measurements []string          `yaml:"measurement"`
	Layouts      []spec.Layout     `yaml:"layouts"`
	EngineLimits spec.EngineLimits `yaml:"engine_limits"`
	// Shard is "k/n", 1-based as ftk ingest reads it: --shard i/n (0-based,
	// like Slurm array and Kubernetes completion indices) writes k = i+1.
	// Absent for a whole plan. Sweep identifies the plan the shards split:
	// every shard of one sweep has the same.
	Shard          string   `yaml:"shard,omitempty"`
	Sweep          string   `yaml:"sweep"`
	Seed           uint64   `yaml:"seed"`
	Warmup         int      `yaml:"warmup"`
	Repeats        int      `yaml:"repeats"`
	GatingContexts []string `yaml:"gating_contexts,omitempty"`
	RoutingPaths   []string `yaml:"routing_paths,omitempty"`
	LoadDists      []string `yaml:"load_distributions,omitempty"`
	// Environment is the provenance of real measurements: Python, torch,
	// CUDA, driver, GPU names, kernel libraries.
	Environment map[string]string `yaml:"environment,omitempty"`
	// Families maps family names (linear_op, attention, moe, collective,
	// cpu_overhead) to their part of the sweep.
	Families map[string]*FamilyMeta `yaml:"families"`
}

// FamilyMeta is one family's part of a sweep folder.
type FamilyMeta struct {
	// PlanChecksum identifies the family's whole (unsharded) plan; shards
	// of one sweep share it.
	PlanChecksum string   `yaml:"plan_checksum"`
	Shapes       int      `yaml:"shapes"` // in this shard
	Files        []string `yaml:"files"`
	// Status is complete when every shape has a row in every file, else
	// incomplete (the sweep was interrupted or shapes failed).
	Status string `yaml:"status"`
	Failed int    `yaml:"failed"`
}

// readMeta reads dir's MetaFile; it returns nil without error when there
// is none.
func readMeta(dir string) (*Meta, error) {
	path := filepath.Join(dir, MetaFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.SchemaVersion != MetaSchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d, this ftk reads %d", path, m.SchemaVersion, MetaSchemaVersion)
	}
	return &m, nil
}

// writeMeta writes m to dir atomically (temp file, then rename).
func writeMeta(dir string, m *Meta) error {
	m.settle()
	data, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	a, err := atomicfile.Create(filepath.Join(dir, MetaFile))
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	if err := a.Sync(); err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}

// sameSweep checks that a folder's earlier sweep measured what this one
// measures, so their rows can share files.
func sameSweep(dir string, old, cur *Meta) error {
	check := []struct {
		name     string
		old, cur any
	}{
		{"device", old.Device, cur.Device},
		{"model", old.Model, cur.Model},
		{"backend", old.Backend, cur.Backend},
		{"precision", old.Precision, cur.Precision},
		{"measurement types", operatorMeasurements(old.Measurements), operatorMeasurements(cur.Measurements)},
		{"layouts", old.Layouts, cur.Layouts},
		{"engine limits", old.EngineLimits, cur.EngineLimits},
		{"shard", old.Shard, cur.Shard},
		{"seed", old.Seed, cur.Seed},
		{"warmup", old.Warmup, cur.Warmup},
		{"repeats", old.Repeats, cur.Repeats},
	}
	for _, c := range check {
		if !reflect.DeepEqual(c.old, c.cur) {
			return fmt.Errorf("%s holds a sweep with %s %v, this run has %v: use --force to start over, or another --out", dir, c.name, c.old, c.cur)
		}
	}
	return nil
}

// operatorMeasurements drops HOST_WALL, which only the host family uses.
func operatorMeasurements(ms []string) []string {
	var out []string
	for _, m := range ms {
		if m != spec.HostWall {
			out = append(out, m)
		}
	}
	return out
}

// settle completes the YAML from its families: the measurement types of
// their files, and the sweep identifier (a hash of what the folder was
// asked to hold), shared by every shard of one command.
func (m *Meta) settle() {
	types := map[string]bool{}
	for _, t := range operatorMeasurements(m.Measurements) {
		types[t] = true
	}
	names := make([]string, 0, len(m.Families))
	for n := range m.Families {
		names = append(names, n)
		if n == string(spec.FamilyCPU) {
			types[spec.HostWall] = true
		}
	}
	sort.Strings(names)
	m.Measurements = m.Measurements[:0]
	for _, t := range []string{spec.CUDAEvent, spec.KernelOnly, spec.CPUTime, spec.HostWall} {
		if types[t] {
			m.Measurements = append(m.Measurements, t)
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s|%s|%s|%v|%v|%v", m.Device, m.Model, m.Backend, m.Measurements, m.Layouts, m.EngineLimits)
	for _, n := range names {
		fmt.Fprintf(h, "|%s=%s", n, m.Families[n].PlanChecksum)
	}
	m.Sweep = hex.EncodeToString(h.Sum(nil)[:8])
}
