package search

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ftk-dev/ftk/atomicfile"
)

// Candidate statuses.
const (
	StatusOK       = "ok"       // searched: RateRPS is its highest passing rate
	StatusPruned   = "pruned"   // cannot enter the top K
	StatusRejected = "rejected" // the simulator refuses it, or no rate passes
)

// Result is one candidate's outcome: the file DIR/candidates/ID/result.json.
type Result struct {
	// Settings is the checksum of the search settings it belongs to.
	Settings  string    `json:"settings"`
	ID        string    `json:"id"`
	Candidate Candidate `json:"candidate"`
	GPUs      int       `json:"gpus"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	// RateRPS is the highest passing grid rate (ok), RateIndex its grid
	// index; At is its probe.
	RateRPS   float64 `json:"rate_rps,omitempty"`
	RateIndex int     `json:"rate_index,omitempty"`
	At        *Probe  `json:"at,omitempty"`
	// FailIndex is the grid index of a probe that failed: the pruning
	// probe (pruned), or the lowest rate tried (rejected for the SLO).
	FailIndex int `json:"fail_index,omitempty"`
	// FailRPS is the question's rate (Settings.RateRPS) when the
	// candidate misses the SLO there; AtRate is its probe at that rate.
	FailRPS float64 `json:"fail_rps,omitempty"`
	AtRate  *Probe  `json:"at_rate,omitempty"`
	// Probes is the number of simulations run.
	Probes int `json:"probes"`
}

// Folder layout of a search's output.
const (
	candidatesDir = "candidates"
	resultFile    = "result.json"
	configFile    = "config.yaml"
)

func resultPath(dir, id string) string {
	return filepath.Join(dir, candidatesDir, id, resultFile)
}

// writeResult writes r atomically.
func writeResult(dir string, r *Result) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(resultPath(dir, r.ID), append(data, '\n'))
}

// readResults reads every result.json under dir of the settings sum;
// results of other settings are an error, since they would mix two
// searches.
func readResults(dir, settings string) (map[string]*Result, error) {
	out := map[string]*Result{}
	root := filepath.Join(dir, candidatesDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search results: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name(), resultFile)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // killed before its result was written
		}
		if err != nil {
			return nil, fmt.Errorf("search results: %w", err)
		}
		var r Result
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("search result %s: %w (delete it to search that candidate again)", path, err)
		}
		if r.Settings != settings {
			return nil, fmt.Errorf("search result %s belongs to a search with other settings (checksum %s, this search %s): use another -o folder, or delete %s", path, r.Settings, settings, root)
		}
		if r.ID != e.Name() {
			return nil, fmt.Errorf("search result %s: id %q does not match its folder", path, r.ID)
		}
		out[r.ID] = &r
	}
	return out, nil
}

// writeAtomic writes data to path through package atomicfile: a killed
// search never leaves a half-written file under the final name.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// removeStaleTemps deletes temporary files a killed search left behind.
func removeStaleTemps(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && atomicfile.IsTemp(d.Name()) {
			return os.Remove(path)
		}
		return nil
	})
}
