package collect

// What a sweep records beside its rows: the shapes it gave up on
// (FailuresFile) and the run's metadata (ftk-collect.yaml, see meta.go).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ftk-dev/ftk/spec"
)

func (s *sweep) recordFailure(o outcome) {
	if s.failures == nil {
		f, err := os.OpenFile(filepath.Join(s.dir, FailuresFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintf(s.o.Log, "collect: recording a failure: %v\n", err)
			return
		}
		s.failures = f
	}
	line, _ := json.Marshal(Failure{ShapeID: o.job.shape.ID, Family: string(o.job.shape.Family), Kind: o.job.shape.Kind,
		Measurements: o.job.pending, Attempts: attempts, Error: o.err.Error(), Time: time.Now().UTC().Format(time.RFC3339)})
	s.failures.Write(append(line, '\n'))
}

// FailuresFile lists, one JSON object a line, the shapes a sweep gave up
// on. It is not a CSV so that readers of the folder's CSV files skip it.
const FailuresFile = "failures.jsonl"

// Failure is one line of FailuresFile.
type Failure struct {
	ShapeID      string   `json:"shape_id"`
	Family       string   `json:"family"`
	Kind         string   `json:"kind"`
	Measurements []string `json:"measurement_types"`
	Attempts     int      `json:"attempts"`
	Error        string   `json:"error"`
	Time         string   `json:"time"`
}

// newMeta describes this run.
func (s *sweep) newMeta() *Meta {
	c := s.o.Plan
	m := &Meta{
		SchemaVersion: MetaSchemaVersion, Tool: "ftk collect", FTKVersion: s.o.Version,
		Device: s.label, Model: c.Model.Name, ModelArchitecture: c.Model.Architecture,
		Backend: s.o.Backend, Synthetic: s.o.Backend == BackendSynthetic, Precision: s.rows.precision,
		Measurements: s.o.Measurements, Layouts: c.Layouts, EngineLimits: c.Limits,
		Seed: c.Seed, Warmup: s.o.Warmup, Repeats: s.o.Repeats,
		Environment: s.environment(),
	}
	for _, f := range c.Families {
		if f == spec.FamilyMoE {
			m.GatingContexts, m.RoutingPaths, m.LoadDists = c.GatingContexts, c.RoutingPaths, c.Distributions
		}
	}
	if !s.o.Shard.IsAll() {
		m.Shard = fmt.Sprintf("%d/%d", s.o.Shard.Index+1, s.o.Shard.Count)
	}
	if s.o.Device != nil && s.label != deviceCPU {
		m.DeviceDescription = s.o.Device.Description
	}
	return m
}

// finishMeta records, per family, whether every shape has its rows.
func (s *sweep) finishMeta() error {
	if s.meta == nil {
		return nil
	}
	for _, f := range s.o.Plan.Families {
		fm := s.meta.Families[string(f)]
		complete := true
		for i := range s.shapes {
			sh := &s.shapes[i]
			if sh.Family != f {
				continue
			}
			for _, m := range s.measurementsOf(sh) {
				if !s.has(sh, m) {
					complete = false
				}
			}
		}
		fm.Status = "incomplete"
		if complete {
			fm.Status = "complete"
		}
	}
	return writeMeta(s.dir, s.meta)
}
