package simulate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/runresult"
)

// Outputs says where a run's files go.
type Outputs struct {
	// Dir receives requests.csv, requests.arrow, summary.json and
	// config.yaml (created if missing).
	Dir string
	// ChromeTrace, when set, is the path of a Chrome trace of the run.
	ChromeTrace string
}

// Execute runs cfg on src and writes its outputs. Every file is written to
// a temporary name and renamed into place only when the run succeeded; a
// failed run leaves no output behind.
func Execute(cfg runresult.Config, src Source, out Outputs, opts Options) (*runresult.Summary, error) {
	sim, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulate outputs: %w", err)
	}
	files, err := runresult.CreateRequestFiles(out.Dir)
	if err != nil {
		return nil, err
	}
	sinks := requestSinks{files}
	var chrome *chromeTrace
	var chromeFile *atomicfile.File
	if out.ChromeTrace != "" {
		if chromeFile, err = atomicfile.Create(out.ChromeTrace); err != nil {
			files.Abort()
			return nil, err
		}
		var engines []chromeEngine
		for _, e := range sim.engines {
			engines = append(engines, chromeEngine{name: e.role + " " + strconv.Itoa(e.id), stages: e.pp})
		}
		links := 0
		if sim.disagg != nil {
			links = len(sim.disagg.links)
		}
		chrome = newChromeTrace(chromeFile.Writer, engines, links)
		if sim.disagg != nil {
			sim.disagg.observer = chrome
		}
		sinks = append(sinks, chrome)
		sim.addObserver(chrome)
	}
	if opts.Requests != nil {
		sinks = append(sinks, opts.Requests)
	}
	sim.col.sink = sinks
	abort := func(err error) (*runresult.Summary, error) {
		files.Abort()
		if chromeFile != nil {
			chromeFile.Abort()
		}
		return nil, err
	}
	sum, err := sim.Run(src)
	if err != nil {
		return abort(err)
	}
	if chrome != nil {
		if err := chrome.close(); err != nil {
			return abort(fmt.Errorf("write %s: %w", out.ChromeTrace, err))
		}
		if err := chromeFile.Commit(); err != nil {
			return abort(err)
		}
	}
	if err := files.Commit(); err != nil {
		return nil, err
	}
	if err := runresult.WriteSummary(filepath.Join(out.Dir, runresult.SummaryFile), sum); err != nil {
		return nil, err
	}
	cfgOut := sum.Config
	if err := atomicfile.Write(filepath.Join(out.Dir, runresult.ConfigFile), func(w *bufio.Writer) error { return cfgOut.WriteYAML(w) }); err != nil {
		return nil, err
	}
	return sum, nil
}

// requestSinks sends each request to several sinks.
type requestSinks []RequestSink

// WriteRequest implements RequestSink.
func (s requestSinks) WriteRequest(m *runresult.RequestMetrics) error {
	for _, k := range s {
		if err := k.WriteRequest(m); err != nil {
			return err
		}
	}
	return nil
}

// stepObservers sends each step to several observers.
type stepObservers []StepObserver

// ObserveStep implements StepObserver.
func (o stepObservers) ObserveStep(r *StepRecord) {
	for _, x := range o {
		x.ObserveStep(r)
	}
}

// addObserver adds an observer to every engine.
func (s *Simulation) addObserver(o StepObserver) {
	for _, e := range s.engines {
		if e.observer != nil {
			o = stepObservers{e.observer, o}
		}
		e.observer = o
		if len(e.rec.Stages) == 0 {
			e.rec.Stages = make([]StageSpan, e.pp)
		}
	}
}
