package kerneldb

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Framework is the only framework folder read (AIConfigurator also holds
// TensorRT-LLM and SGLang databases).
const Framework = "vllm"

// Family names a table family folder.
type Family string

// The table families ftk prices.
const (
	FamilyGEMM      Family = "gemm"
	FamilyAttention Family = "attention"
	FamilyMoE       Family = "moe"
	FamilyComm      Family = "comm"
	FamilyMLA       Family = "mla"
)

// The tables ftk prices, by file name without .parquet.
const (
	TableGEMM             = "gemm_perf"
	TableContextAttention = "context_attention_perf"
	TableGenAttention     = "generation_attention_perf"
	TableMoE              = "moe_perf"
	TableAllReduce        = "custom_allreduce_perf"
	TableContextMLA       = "context_mla_perf"
	TableGenMLA           = "generation_mla_perf"
	TableContextMLAModule = "mla_context_module_perf"
	TableGenMLAModule     = "mla_generation_module_perf"
)

// priced maps each table ftk reads to its family.
var priced = map[string]Family{
	TableGEMM: FamilyGEMM, TableContextAttention: FamilyAttention, TableGenAttention: FamilyAttention,
	TableMoE: FamilyMoE, TableAllReduce: FamilyComm, TableContextMLA: FamilyMLA, TableGenMLA: FamilyMLA,
	TableContextMLAModule: FamilyMLA, TableGenMLAModule: FamilyMLA,
}

// Priced reports whether ftk reads table, and its family.
func Priced(table string) (Family, bool) {
	f, ok := priced[table]
	return f, ok
}

// Entry is one table of one vLLM version folder: measured there (Path set)
// or borrowed from another version (From set, from reuse.yaml).
type Entry struct {
	Family  string
	Table   string
	Version string
	Path    string // the parquet file, when measured with Version
	From    string // the version the table is borrowed from (reuse.yaml)
	Reason  string // reuse.yaml's reason
}

// System is the part of the GPU's system YAML ftk reports.
type System struct {
	Path           string
	MemBWBytes     float64 `yaml:"mem_bw"`
	MemCapacity    float64 `yaml:"mem_capacity"`
	BF16TCFLOPS    float64 `yaml:"bfloat16_tc_flops"`
	FP8TCFLOPS     float64 `yaml:"fp8_tc_flops"`
	PowerW         float64 `yaml:"power"`
	SMVersion      int     `yaml:"sm_version"`
	GPUsPerNode    int     `yaml:"-"`
	IntraNodeBWBps float64 `yaml:"-"`
}

// DB is an indexed database of one GPU.
type DB struct {
	Dir    string // the <gpu> folder
	GPU    string // its name (h100_sxm)
	System *System
	// Entries holds every table of every version folder, sorted by family,
	// table and version.
	Entries []Entry
}

// SystemFile is the name of the system YAML inside an ingested copy (the
// original sits beside the <gpu> folder as <gpu>.yaml).
const SystemFile = "system.yaml"

// Open indexes the database in dir (a <gpu> folder, or a copy ftk ingest
// wrote). It reads the YAML files, not the tables; the system YAML
// (dir/system.yaml, else <gpu>.yaml beside dir) is read when present.
func Open(dir string) (*DB, error) {
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("kernel database: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("kernel database %s: not a folder (give the <gpu> folder of an AIConfigurator database, e.g. .../aiconfigurator/h100_sxm)", dir)
	}
	db := &DB{Dir: dir, GPU: filepath.Base(dir)}
	fams, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kernel database: %w", err)
	}
	for _, f := range fams {
		if !f.IsDir() {
			continue
		}
		vdir := filepath.Join(dir, f.Name(), Framework)
		vers, err := os.ReadDir(vdir)
		if err != nil {
			continue // no vLLM tables in this family
		}
		for _, v := range vers {
			if !v.IsDir() {
				continue
			}
			es, err := readVersion(f.Name(), v.Name(), filepath.Join(vdir, v.Name()))
			if err != nil {
				return nil, err
			}
			db.Entries = append(db.Entries, es...)
		}
	}
	if len(db.Entries) == 0 {
		return nil, fmt.Errorf("kernel database %s: no <family>/%s/<version>/ folder with collection_meta.yaml or reuse.yaml: not an AIConfigurator database", dir, Framework)
	}
	sort.Slice(db.Entries, func(i, j int) bool {
		a, b := db.Entries[i], db.Entries[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return CompareVersions(a.Version, b.Version) < 0
	})
	for _, p := range []string{filepath.Join(dir, SystemFile), filepath.Join(filepath.Dir(dir), db.GPU+".yaml")} {
		sys, err := readSystem(p)
		if err == nil {
			db.System = sys
			break
		}
		if !os.IsNotExist(err) {
			return nil, err
		}
	}
	if m, err := ReadManifest(dir); err == nil {
		db.GPU = m.GPU
	}
	return db, nil
}

// IsDatabase reports whether dir looks like an AIConfigurator <gpu> folder
// (a <family>/vllm/<version>/ folder holding collection_meta.yaml or
// reuse.yaml).
func IsDatabase(dir string) bool {
	for _, name := range []string{"collection_meta.yaml", "reuse.yaml"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*", Framework, "*", name)); len(m) > 0 {
			return true
		}
	}
	return false
}

type collectionMeta struct {
	Runtime struct {
		Framework string `yaml:"framework"`
		Version   string `yaml:"version"`
	} `yaml:"runtime"`
	Tables map[string]struct {
		Status string `yaml:"status"`
	} `yaml:"tables"`
}

type reuseFile struct {
	Reuse []struct {
		Table       string `yaml:"table"`
		FromVersion string `yaml:"from_version"`
		Reason      string `yaml:"reason"`
	} `yaml:"reuse"`
}

// readVersion lists the tables of one version folder: those its
// collection_meta.yaml names (each must have its parquet file), every
// other parquet file found there, and those reuse.yaml borrows.
func readVersion(family, version, dir string) ([]Entry, error) {
	var out []Entry
	seen := map[string]bool{}
	metaPath := filepath.Join(dir, "collection_meta.yaml")
	if b, err := os.ReadFile(metaPath); err == nil {
		var m collectionMeta
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", metaPath, err)
		}
		if m.Runtime.Version != "" && m.Runtime.Version != version {
			return nil, fmt.Errorf("%s: runtime.version %s in the folder of version %s", metaPath, m.Runtime.Version, version)
		}
		for t := range m.Tables {
			p := filepath.Join(dir, t+".parquet")
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("%s: table %s listed but %s is missing", metaPath, t, p)
			}
			out = append(out, Entry{Family: family, Table: t, Version: version, Path: p})
			seen[t] = true
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range files {
		t := strings.TrimSuffix(filepath.Base(p), ".parquet")
		if !seen[t] {
			out = append(out, Entry{Family: family, Table: t, Version: version, Path: p})
			seen[t] = true
		}
	}
	reusePath := filepath.Join(dir, "reuse.yaml")
	if b, err := os.ReadFile(reusePath); err == nil {
		var r reuseFile
		if err := yaml.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", reusePath, err)
		}
		for i, e := range r.Reuse {
			if e.Table == "" || e.FromVersion == "" {
				return nil, fmt.Errorf("%s: reuse entry %d needs table and from_version", reusePath, i+1)
			}
			if seen[e.Table] {
				continue // measured here: the measurement wins
			}
			out = append(out, Entry{Family: family, Table: e.Table, Version: version, From: e.FromVersion, Reason: e.Reason})
			seen[e.Table] = true
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	return out, nil
}

func readSystem(path string) (*System, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		GPU  System `yaml:"gpu"`
		Node struct {
			GPUsPerNode int     `yaml:"num_gpus_per_node"`
			IntraNodeBW float64 `yaml:"intra_node_bw"`
		} `yaml:"node"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := f.GPU
	s.Path, s.GPUsPerNode, s.IntraNodeBWBps = path, f.Node.GPUsPerNode, f.Node.IntraNodeBW
	return &s, nil
}

// Tables lists the distinct table names of the database, sorted.
func (db *DB) Tables() []string {
	var out []string
	for _, e := range db.Entries {
		if len(out) == 0 || out[len(out)-1] != e.Table {
			out = append(out, e.Table)
		}
	}
	sort.Strings(out)
	return out
}

// Versions lists the vLLM versions with a folder for table, oldest first.
func (db *DB) Versions(table string) []string {
	var out []string
	for _, e := range db.Entries {
		if e.Table == table {
			out = append(out, e.Version)
		}
	}
	return out
}
