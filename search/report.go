package search

import (
	"bytes"
	"errors"
	"sync"

	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/simulate"
)

// Report files in a search's folder.
const (
	ResultsFile = "results.csv"
	ParetoFile  = "pareto.png"
)

// Row is one candidate in the report: its result, made independent of the
// order candidates were searched in (see NewReport), and its figures.
type Row struct {
	Result
	// Rank is the place among the top K (1 = best); 0 outside it.
	Rank int
	// Score is the rate per ranking unit (per GPU, or per currency unit
	// per hour when prices are given).
	Score float64
	// GoodputPerGPU is RateRPS / GPUs.
	GoodputPerGPU float64
	// OutputTokPerSPerGPU is RateRPS x the mean output tokens of the
	// workload, per GPU: the output tokens served per second at the rate.
	OutputTokPerSPerGPU float64
	// CostPerMOutputTok is the price of a million output tokens at the
	// rate (NaN without prices).
	CostPerMOutputTok float64
	// ConfigRateRPS is the rate of the row's config.yaml.
	ConfigRateRPS float64
}

// Report ranks a search's results.
type Report struct {
	s      Settings
	wl     *workload
	Rows   []*Row // every candidate, in enumeration order
	Ranked []*Row // the top K, best first
	// Cutoff is the K-th best score (0 with fewer than K searched).
	Cutoff float64
}

// NewReport ranks the results of a whole search (every candidate of the
// settings, in enumeration order). The top K by score (ties by ID) are
// searched exactly by every run, sharded or not, whatever the order of
// evaluation; which of the others were searched or pruned depends on that
// order, so the report calls all of them pruned below the cutoff. The
// report is therefore the same for every run of the same settings.
func NewReport(s Settings, results []*Result) (*Report, error) {
	wl, err := newWorkload(s.Base.Workload)
	if err != nil {
		return nil, err
	}
	rep := &Report{s: s, wl: wl}
	g := grid{tol: s.RateTolerance}
	var ok []*Row
	for _, res := range results {
		if res == nil {
			return nil, fmt.Errorf("search report: a candidate has no result: run the search to the end")
		}
		r := &Row{Result: *res, CostPerMOutputTok: math.NaN()}
		r.Probes = 0 // depends on the order of evaluation
		u := units(r.Candidate, s.Space.Pools)
		if r.Status == StatusOK {
			r.Score = r.RateRPS / u
			ok = append(ok, r)
		}
		rep.Rows = append(rep.Rows, r)
	}
	sort.SliceStable(ok, func(i, j int) bool {
		if ok[i].Score != ok[j].Score {
			return ok[i].Score > ok[j].Score
		}
		return ok[i].ID < ok[j].ID
	})
	if len(ok) >= s.TopK {
		rep.Cutoff = ok[s.TopK-1].Score
	}
	for i, r := range ok {
		if i < s.TopK {
			r.Rank = i + 1
			rep.Ranked = append(rep.Ranked, r)
		}
	}
	for _, r := range rep.Rows {
		u := units(r.Candidate, s.Space.Pools)
		switch {
		case r.Rank > 0:
			r.GoodputPerGPU = r.RateRPS / float64(r.GPUs)
			r.OutputTokPerSPerGPU = r.GoodputPerGPU * wl.meanOutputTokens
			if s.pricesGiven() { // u is then the deployment's price per hour
				r.CostPerMOutputTok = u / 3600 / (r.RateRPS * wl.meanOutputTokens) * 1e6
			}
			r.ConfigRateRPS = r.RateRPS
		case r.Status == StatusOK || r.Status == StatusPruned:
			k := g.ceil(rep.Cutoff * u)
			r.Status, r.At, r.RateRPS, r.RateIndex, r.Score = StatusPruned, nil, 0, 0, 0
			r.FailIndex = k
			r.Reason = fmt.Sprintf("below the top %d: it needs %.4g req/s (%.4g req/s per GPU) to enter it", s.TopK, g.rate(k), g.rate(k)/float64(r.GPUs))
			r.ConfigRateRPS = g.rate(k)
		case r.FailIndex != 0:
			r.ConfigRateRPS = g.rate(r.FailIndex)
		default:
			r.ConfigRateRPS = 1
		}
	}
	return rep, nil
}

// pricesGiven reports whether every pool has a price.
func (s *Settings) pricesGiven() bool {
	for _, p := range s.Space.Pools {
		if !(p.CostPerGPUHour > 0) {
			return false
		}
	}
	return len(s.Space.Pools) > 0
}

// curveFractions are the fractions of a ranked candidate's rate at which
// the Pareto plot simulates it again, to trace its latency against goodput.
var curveFractions = []float64{0.25, 0.5, 0.7, 0.85}

// curves simulates each ranked candidate at fractions of its rate: the
// latency a lower rate buys. Results are in rank order, the candidate's
// own rate last.
func (rep *Report) curves(opts simulate.Options, workers int) ([][]Probe, error) {
	out := make([][]Probe, len(rep.Ranked))
	errs := make([]error, len(rep.Ranked))
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, r := range rep.Ranked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// Limits at infinity: no run stops early, every latency is measured.
			p := &prober{cfg: r.Candidate.Config(rep.s.Base), wl: rep.wl, slo: rep.s.SLO.Scaled(math.Inf(1)), opts: opts}
			for _, f := range curveFractions {
				pr, err := p.probe(f * r.RateRPS)
				if err != nil {
					errs[i] = fmt.Errorf("search: %s at %.4g req/s: %w", r.ID, f*r.RateRPS, err)
					return
				}
				out[i] = append(out[i], pr)
			}
			out[i] = append(out[i], *r.At)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// WriteFiles writes results.csv, pareto.png and every candidate's
// config.yaml (its simulation at ConfigRateRPS: "ftk simulate --config"
// reruns it) into dir, each atomically. The plot simulates the ranked
// candidates again at lower rates, with opts, on workers goroutines (0:
// one per CPU).
func (rep *Report) WriteFiles(dir string, opts simulate.Options, workers int) error {
	for _, r := range rep.Rows {
		p := &prober{cfg: r.Candidate.Config(rep.s.Base), wl: rep.wl}
		cfg := p.configAt(r.ConfigRateRPS).WithAbsolutePaths() // reruns from any working directory
		var b bytes.Buffer
		if err := cfg.WriteYAML(&b); err != nil {
			return fmt.Errorf("search: config of %s: %w", r.ID, err)
		}
		if err := writeAtomic(filepath.Join(dir, candidatesDir, r.ID, configFile), b.Bytes()); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := rep.WriteCSV(&b); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, ResultsFile), b.Bytes()); err != nil {
		return err
	}
	b.Reset()
	curves, err := rep.curves(opts, workers)
	if err != nil {
		return err
	}
	if err := rep.drawPareto(&b, curves); err != nil {
		return fmt.Errorf("search: %s: %w", ParetoFile, err)
	}
	return writeAtomic(filepath.Join(dir, ParetoFile), b.Bytes())
}

func num(v float64) string {
	if math.IsNaN(v) || v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// WriteCSV writes one row per candidate.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"rank", "id", "status", "reason", "device", "mode", "gpus", "tp", "pp", "ep", "replicas",
		"prefill_instances", "prefill_tp", "prefill_ep", "decode_instances", "decode_tp", "decode_ep",
		"max_num_seqs", "max_num_batched_tokens", "execution_mode",
		"rate_rps", "goodput_rps_per_gpu", "output_tok_s_per_gpu", "cost_per_m_output_tokens"}
	for _, t := range rep.s.SLO {
		head = append(head, t.Name())
	}
	head = append(head, "config")
	if err := cw.Write(head); err != nil {
		return err
	}
	itoa := func(v int) string {
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	for _, r := range rep.Rows {
		c := &r.Candidate
		l, p, d := c.Layout.Normalize(), c.Prefill, c.Decode
		rec := []string{itoa(r.Rank), r.ID, r.Status, r.Reason, c.Device, c.Mode, strconv.Itoa(r.GPUs)}
		if c.Mode == "disaggregated" {
			rec = append(rec, "", "", "", "", itoa(c.PrefillInstances), itoa(p.TP), itoa(p.EP), itoa(c.DecodeInstances), itoa(d.TP), itoa(d.EP))
		} else {
			rec = append(rec, itoa(l.TP), itoa(l.PP), itoa(l.EP), itoa(l.DP), "", "", "", "", "", "")
		}
		rec = append(rec, strconv.Itoa(c.MaxNumSeqs), strconv.Itoa(c.MaxNumBatchedTokens), c.ExecutionMode,
			num(r.RateRPS), num(r.GoodputPerGPU), num(r.OutputTokPerSPerGPU), num(r.CostPerMOutputTok))
		for _, t := range rep.s.SLO {
			v := math.NaN()
			if r.At != nil {
				v = r.At.Latency[t.Name()]
			}
			rec = append(rec, num(v))
		}
		rec = append(rec, filepath.Join(candidatesDir, r.ID, configFile))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable prints the ranking and a count of the other candidates.
func (rep *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "RANK\tDEPLOYMENT\tDEVICE\tGPUS\tSEQS\tTOKENS\tEXECUTION\tREQ/S\tREQ/S/GPU\tOUT TOK/S/GPU\t$/M OUT TOK"
	for _, t := range rep.s.SLO {
		head += "\t" + t.Name()
	}
	fmt.Fprintln(tw, head+"\t")
	for _, r := range rep.Ranked {
		c := &r.Candidate
		cost := "-"
		if !math.IsNaN(r.CostPerMOutputTok) {
			cost = fmt.Sprintf("%.3f", r.CostPerMOutputTok)
		}
		line := fmt.Sprintf("%d\t%s\t%s\t%d\t%d\t%d\t%s\t%.4g\t%.4g\t%.0f\t%s", r.Rank, c.Describe(), c.Device, r.GPUs,
			c.MaxNumSeqs, c.MaxNumBatchedTokens, c.ExecutionMode, r.RateRPS, r.GoodputPerGPU, r.OutputTokPerSPerGPU, cost)
		for _, t := range rep.s.SLO {
			line += fmt.Sprintf("\t%.4g", r.At.Latency[t.Name()])
		}
		fmt.Fprintln(tw, line+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := map[string]int{}
	for _, r := range rep.Rows {
		n[r.Status]++
	}
	by := "goodput per GPU"
	if rep.s.pricesGiven() {
		by = "cost per output token"
	}
	_, err := fmt.Fprintf(w, "%d candidates: %d ranked (by %s), %d pruned below the top %d, %d rejected (reasons in %s)\n",
		len(rep.Rows), len(rep.Ranked), by, n[StatusPruned], rep.s.TopK, n[StatusRejected], ResultsFile)
	return err
}
