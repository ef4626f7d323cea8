package validate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// nameSeparator separates configuration, workload and repetition in a run's
// file or directory name: CONFIG__WORKLOAD__rN.
const nameSeparator = "__"

// idFromName parses CONFIG__WORKLOAD or CONFIG__WORKLOAD__rN from the base
// name of path (a .json or .csv extension removed).
func idFromName(path string) (RunID, bool) {
	base := filepath.Base(filepath.Clean(path))
	if ext := strings.ToLower(filepath.Ext(base)); ext == ".json" || ext == ".csv" {
		base = base[:len(base)-len(ext)]
	}
	parts := strings.Split(base, nameSeparator)
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return RunID{}, false
	}
	id := RunID{Config: parts[0], Workload: parts[1]}
	if len(parts) == 3 {
		rep, err := strconv.Atoi(strings.TrimPrefix(parts[2], "r"))
		if err != nil || rep < 1 || !strings.HasPrefix(parts[2], "r") {
			return RunID{}, false
		}
		id.Repetition = rep
	}
	return id, true
}

// ManifestEntry is one run of a manifest.
type ManifestEntry struct {
	// Path is the run's file or directory, relative to the manifest.
	Path       string `yaml:"path"`
	Side       string `yaml:"side"` // measured or simulated
	Config     string `yaml:"config"`
	Workload   string `yaml:"workload"`
	Repetition int    `yaml:"repetition"` // 1-based; 0 or absent: unnumbered
	// Model overrides or supplies the model label (a plain CSV has none).
	Model string `yaml:"model"`
}

// Manifest lists runs with their identities:
//
//	runs:
//	  - {path: bench/conv-1.json, side: measured, config: h100-tp1, workload: conv, repetition: 1}
//	  - {path: sim/conv, side: simulated, config: h100-tp1, workload: conv}
type Manifest struct {
	Runs []ManifestEntry `yaml:"runs"`
}

// ReadManifest reads a manifest and every run it lists, with the identity
// the manifest gives.
func ReadManifest(path string) ([]*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	if len(m.Runs) == 0 {
		return nil, fmt.Errorf("manifest %s: no runs (want a list under runs:)", path)
	}
	dir := filepath.Dir(path)
	runs := make([]*Run, 0, len(m.Runs))
	for i, e := range m.Runs {
		where := fmt.Sprintf("manifest %s run %d", path, i+1)
		var side Side
		switch e.Side {
		case "measured":
			side = Measured
		case "simulated":
			side = Simulated
		default:
			return nil, fmt.Errorf("%s: side %q: want measured or simulated", where, e.Side)
		}
		if e.Path == "" || e.Config == "" || e.Workload == "" {
			return nil, fmt.Errorf("%s: path, config and workload are required", where)
		}
		if e.Repetition < 0 {
			return nil, fmt.Errorf("%s: repetition %d: want a positive number (or none)", where, e.Repetition)
		}
		p := e.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		r, err := readRunFile(p, side)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		r.ID = RunID{Config: e.Config, Workload: e.Workload, Repetition: e.Repetition}
		if e.Model != "" {
			r.Model = e.Model
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// ReadRun reads one run: an ftk simulate output directory, a vLLM benchmark
// result JSON (.json) or a per-request CSV (.csv). Its identity comes from
// the file's metadata, else from its name (see the package doc).
func ReadRun(path string, side Side) (*Run, error) {
	r, err := readRunFile(path, side)
	if err != nil {
		return nil, err
	}
	if r.ID.Config == "" {
		id, ok := idFromName(path)
		if !ok {
			return nil, fmt.Errorf("%s: cannot tell its configuration and workload: name it CONFIG__WORKLOAD__rN%s, give vllm bench serve --metadata config=C workload=W repetition=N, or list it in a manifest", path, filepath.Ext(path))
		}
		r.ID = id
	}
	return r, nil
}

func readRunFile(path string, side Side) (*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var r *Run
	switch {
	case st.IsDir():
		r, err = ReadSimulated(path)
	case strings.EqualFold(filepath.Ext(path), ".json"):
		r, err = ReadVLLMBenchmark(path)
	case strings.EqualFold(filepath.Ext(path), ".csv"):
		r, err = ReadRequestsCSV(path, side)
	default:
		return nil, fmt.Errorf("%s: unknown run format: want an ftk simulate output directory, a vLLM benchmark .json or a per-request .csv", path)
	}
	if err != nil {
		return nil, err
	}
	r.Side = side
	return r, nil
}

// ReadRuns reads runs of one side from paths. A path is a run (see ReadRun)
// or a directory of runs: its .json and .csv files and its subdirectories
// that are ftk simulate outputs, in name order.
func ReadRuns(paths []string, side Side) ([]*Run, error) {
	var runs []*Run
	for _, p := range paths {
		members, err := expandRunDir(p)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			r, err := ReadRun(m, side)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// expandRunDir returns path itself when it is a file or a simulate output
// directory, else the runs inside it.
func expandRunDir(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() || isSimulateDir(path) {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() && isSimulateDir(p) || !e.IsDir() && (ext == ".json" || ext == ".csv") {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no runs in this directory (no .json, .csv or ftk simulate output)", path)
	}
	return out, nil
}
