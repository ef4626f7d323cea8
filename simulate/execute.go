package simulate

import (
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

// Execute runs the resolved configuration r on src and writes its outputs
// (opts as for Resolved.New). Every file is written to
// a temporary name and renamed into place only when the run succeeded; a
// failed run leaves no output behind.
func Execute(r *Resolved, src Source, out Outputs, opts Options) (*runresult.Summary, error) {
	if err := os.MkdirAll(out.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulate outputs: %w", err)
	}
	files, err := runresult.CreateRequestFiles(out.Dir, r.cfg.Engine.KVOffloadingSize > 0)
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
		for _, e := range r.engines {
			engines = append(engines, chromeEngine{name: e.role + " " + strconv.Itoa(e.id), stages: r.roles[e.kind].layout.PP})
		}
		links := 0
		if r.cfg.Mode == runresult.ModeDisaggregated {
			links = r.entry // one KV link per prefill instance
		}
		chrome = newChromeTrace(chromeFile.Writer, engines, links)
		sinks = append(sinks, chrome)
		if opts.Observer != nil {
			opts.Observer = stepObservers{opts.Observer, chrome}
		} else {
			opts.Observer = chrome
		}
		opts.transfers = chrome
	}
	if opts.Requests != nil {
		sinks = append(sinks, opts.Requests)
	}
	opts.Requests = sinks
	sim, err := r.New(opts)
	if err != nil {
		files.Abort()
		if chromeFile != nil {
			chromeFile.Abort()
		}
		return nil, err
	}
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
	return sum, commitRun(out.Dir, files, sum)
}

// commitRun writes the summary and config.yaml of a finished run beside
// its request files and commits the four as a unit, summary.json last (the
// file that says a run is whole): a failed write leaves the folder's
// previous run as it was.
func commitRun(dir string, files *runresult.RequestFiles, sum *runresult.Summary) error {
	reqs, err := files.Finish()
	if err != nil {
		return err
	}
	abort := func(err error, more ...*atomicfile.File) error {
		for _, f := range append(reqs, more...) {
			f.Abort()
		}
		return err
	}
	cfgPath := filepath.Join(dir, runresult.ConfigFile)
	cfgFile, err := atomicfile.Create(cfgPath)
	if err != nil {
		return abort(err)
	}
	cfgOut := sum.Config.WithAbsolutePaths() // reruns from any working directory
	if err := cfgOut.WriteYAML(cfgFile.Writer); err != nil {
		return abort(fmt.Errorf("write %s: %w", cfgPath, err), cfgFile)
	}
	sumFile, err := runresult.CreateSummary(filepath.Join(dir, runresult.SummaryFile), sum)
	if err != nil {
		return abort(err, cfgFile)
	}
	return atomicfile.CommitAll(append(reqs, cfgFile, sumFile)...)
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
