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
	"slices"
	"sort"
	"strconv"
	"strings"
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
	// RateAtMostRPS bounds a pruned row's rate from above (the cutoff
	// rate: by the monotone grid, whatever order the search ran in, the
	// row failed at or below it, or ranked no better than the K-th).
	RateAtMostRPS float64
	// MarginPct is how far the rate lies above the question's
	// (Settings.RateRPS), in percent.
	MarginPct float64
	// SeedRatesRPS are a ranked row's rates with each of the
	// Settings.Seeds workload seeds (its own first); SeedMinRPS and
	// SeedMaxRPS their range.
	SeedRatesRPS           []float64
	SeedMinRPS, SeedMaxRPS float64
	// Band is the error band of the row's configuration class; a ranked
	// row's MarginInBand says its margin over the question's rate, and
	// NextInBand its margin over the next rank, lies inside it (the
	// larger of the two rows' bands): real vLLM may not keep it.
	Band                     Band
	MarginInBand, NextInBand bool
	// NextPct is the score's margin over the next ranked row, in
	// percent; Close says that margin is inside the two rows' spread
	// over seeds (the order of the two is not sure).
	NextPct float64
	Close   bool
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
	bands, err := newBands(&s)
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
		r.Band = bands.of(r.Candidate)
		u := units(r.Candidate, s.Space.Pools)
		if r.Status == StatusOK {
			r.Score = r.RateRPS / u
			ok = append(ok, r)
		}
		rep.Rows = append(rep.Rows, r)
	}
	key := func(r *Row) rankKey { return rankKey{units(r.Candidate, s.Space.Pools), r.RateRPS} }
	sort.SliceStable(ok, func(i, j int) bool {
		a, b := key(ok[i]), key(ok[j])
		if s.better(a, b) || s.better(b, a) {
			return s.better(a, b)
		}
		return ok[i].ID < ok[j].ID
	})
	var kth rankKey
	if len(ok) >= s.TopK {
		kth = key(ok[s.TopK-1])
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
			if s.RateRPS > 0 {
				r.MarginPct = 100 * (r.RateRPS/s.RateRPS - 1)
				r.MarginInBand = r.MarginPct < r.Band.Pct
				if s.pricesGiven() { // the price of serving the question's rate
					r.CostPerMOutputTok = u / 3600 / (s.RateRPS * wl.meanOutputTokens) * 1e6
				}
			}
		case (r.Status == StatusOK || r.Status == StatusPruned || rep.Cutoff > 0 && r.AtRate != nil && r.AtRate.Pass) &&
			!(s.cheapest() && rep.Cutoff > 0 && u < kth.units):
			// A candidate meeting the question's rate over a probe but not
			// ranked was pruned, or failed the long run at that rate, or
			// ranked below the K-th, as the order of the search had it:
			// every one is reported alike, pruned below the cutoff. (One
			// cheaper than the K-th was never pruned: whatever the order,
			// its long run at the rate rejected it.)
			r.Status, r.At, r.RateRPS, r.RateIndex, r.Score = StatusPruned, nil, 0, 0, 0
			need, possible := s.needRate(kth, u)
			if !possible {
				r.FailIndex, r.ConfigRateRPS = 0, s.RateRPS
				r.Reason = fmt.Sprintf("meets the SLO at %.4g req/s over %d requests; costs more than the top %d (%s)", s.RateRPS, wl.n, s.TopK, s.unitsText(kth.units))
				continue
			}
			k := g.ceil(need)
			r.FailIndex = k
			r.Reason = fmt.Sprintf("below the top %d: it needs %.4g req/s (%.4g req/s per GPU) to enter it", s.TopK, g.rate(k), g.rate(k)/float64(r.GPUs))
			if s.RateRPS > 0 {
				r.Reason = fmt.Sprintf("meets the SLO at %.4g req/s over %d requests; ", s.RateRPS, wl.n) + r.Reason
			}
			r.ConfigRateRPS, r.RateAtMostRPS = g.rate(k), g.rate(k)
		case r.FailRPS != 0:
			r.ConfigRateRPS = r.FailRPS
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
			p := &prober{cfg: rep.s.config(r.Candidate), wl: rep.wl, slo: rep.s.SLO.Scaled(math.Inf(1)), opts: opts}
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
	if err := rep.spread(opts, workers); err != nil {
		return err
	}
	for _, r := range rep.Rows {
		p := &prober{cfg: rep.s.config(r.Candidate), wl: rep.wl}
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

func pct(v float64, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func yes(v bool) string {
	if v {
		return "yes"
	}
	return ""
}

// latencyProbe is the probe whose latencies a row shows: at the
// question's rate when there is one (every candidate probed there), else
// at the row's own rate.
func (rep *Report) latencyProbe(r *Row) *Probe {
	if rep.s.RateRPS > 0 {
		return r.AtRate
	}
	return r.At
}

// WriteCSV writes one row per candidate; the latency columns are at the
// question's rate (--rate) when there is one, else at the row's rate.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"rank", "id", "status", "reason", "device", "mode", "gpus", "tp", "pp", "ep", "replicas",
		"prefill_instances", "prefill_tp", "prefill_ep", "decode_instances", "decode_tp", "decode_ep",
		"max_num_seqs", "max_num_batched_tokens", "execution_mode",
		"rate_rps", "rate_at_most_rps", "margin_pct", "rate_min_rps", "rate_max_rps", "vs_next_pct", "close",
		"error_band_pct", "error_band_class", "margin_in_band", "next_in_band",
		"goodput_rps_per_gpu", "output_tok_s_per_gpu", "cost_per_m_output_tokens"}
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
			num(r.RateRPS), num(r.RateAtMostRPS), pct(r.MarginPct, r.Rank > 0 && rep.s.RateRPS > 0), num(r.SeedMinRPS), num(r.SeedMaxRPS),
			pct(r.NextPct, r.Rank > 0 && r.Rank < len(rep.Ranked)), yes(r.Close),
			pct(r.Band.Pct, r.Band.Runs > 0), r.Band.Class, yes(r.MarginInBand), yes(r.NextInBand), num(r.GoodputPerGPU), num(r.OutputTokPerSPerGPU), num(r.CostPerMOutputTok))
		for _, t := range rep.s.SLO {
			v := math.NaN()
			if at := rep.latencyProbe(r); at != nil {
				v = at.Latency[t.Name()]
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

// WriteTable prints the ranking, then every other candidate with its
// rate's bound (pruned) or its reason (rejected), and a count of each.
func (rep *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	rateMode, seeds := rep.s.RateRPS > 0, rep.s.Seeds > 1
	head := "RANK\tDEPLOYMENT\tDEVICE\tGPUS\tSEQS\tTOKENS\tEXECUTION\tREQ/S"
	if rateMode {
		head += "\tMARGIN"
	}
	if seeds {
		head += fmt.Sprintf("\tREQ/S %d SEEDS", rep.s.Seeds)
	}
	head += "\tVS NEXT\tBAND\tREQ/S/GPU\tOUT TOK/S/GPU\t$/M OUT TOK"
	for _, t := range rep.s.SLO {
		if rateMode {
			head += fmt.Sprintf("\t%s@%.4g", t.Name(), rep.s.RateRPS)
		} else {
			head += "\t" + t.Name()
		}
	}
	fmt.Fprintln(tw, head+"\t")
	anyClose, anyInBand := false, false
	var bands []Band
	for _, r := range rep.Ranked {
		c := &r.Candidate
		cost := "-"
		if !math.IsNaN(r.CostPerMOutputTok) {
			cost = fmt.Sprintf("%.3f", r.CostPerMOutputTok)
		}
		line := fmt.Sprintf("%d\t%s\t%s\t%d\t%d\t%d\t%s\t%.4g", r.Rank, c.Describe(), c.Device, r.GPUs,
			c.MaxNumSeqs, c.MaxNumBatchedTokens, c.ExecutionMode, r.RateRPS)
		if rateMode {
			line += fmt.Sprintf("\t%+.0f%%", r.MarginPct)
			if r.MarginInBand {
				line += " !"
				anyInBand = true
			}
		}
		if seeds {
			line += fmt.Sprintf("\t%.4g-%.4g", r.SeedMinRPS, r.SeedMaxRPS)
		}
		next := "-"
		if r.Rank < len(rep.Ranked) {
			next = fmt.Sprintf("%+.1f%%", r.NextPct)
			if r.Close {
				next += " ~"
				anyClose = true
			}
			if r.NextInBand {
				next += " !"
				anyInBand = true
			}
		}
		if !slices.Contains(bands, r.Band) {
			bands = append(bands, r.Band)
		}
		line += fmt.Sprintf("\t%s\t%s\t%.4g\t%.0f\t%s", next, r.Band, r.GoodputPerGPU, r.OutputTokPerSPerGPU, cost)
		at := rep.latencyProbe(r)
		for _, t := range rep.s.SLO {
			line += fmt.Sprintf("\t%.4g", at.Latency[t.Name()])
		}
		fmt.Fprintln(tw, line+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if anyClose {
		fmt.Fprintf(w, "~: the margin over the next rank is inside the two rates' spread over %d seeds: their order is not sure\n", rep.s.Seeds)
	}
	if len(bands) > 0 {
		var classes []string
		for _, b := range bands {
			classes = append(classes, b.Describe())
		}
		line := "BAND: " + strings.Join(classes, "; ") + ": the largest error of ftk on published vLLM runs of the class (docs/validation.md)"
		if anyInBand {
			line += "; !: a margin inside it, which real vLLM may not keep"
		}
		fmt.Fprintln(w, line)
	}
	n := map[string]int{}
	var others []*Row
	for _, r := range rep.Rows {
		n[r.Status]++
		if r.Rank == 0 {
			others = append(others, r)
		}
	}
	if len(others) > 0 {
		fmt.Fprintln(w, "not ranked:")
		var nb bytes.Buffer
		tw = tabwriter.NewWriter(&nb, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  DEPLOYMENT\tDEVICE\tGPUS\tSEQS\tTOKENS\tEXECUTION\tSTATUS\tREQ/S\tWHY")
		for _, r := range others {
			c := &r.Candidate
			rate, why := "-", r.Reason
			if r.RateAtMostRPS > 0 { // the reason is the bound, said once below
				rate, why = fmt.Sprintf("<= %.4g", r.RateAtMostRPS), ""
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", c.Describe(), c.Device, r.GPUs, c.MaxNumSeqs, c.MaxNumBatchedTokens, c.ExecutionMode, r.Status, rate, why)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for line := range strings.Lines(nb.String()) { // no padding after the last word
			if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
				return err
			}
		}
		if n[StatusPruned] > 0 {
			meets := ""
			if rateMode {
				meets = fmt.Sprintf(" (each meets the SLO at %.4g req/s)", rep.s.RateRPS)
			}
			fmt.Fprintf(w, "pruned%s: <= X is the rate it would need to enter the top %d, a bound on its own (--top more to search it)\n", meets, rep.s.TopK)
		}
	}
	by := "goodput per GPU"
	switch {
	case rep.s.cheapest() && rep.s.Space.UseAll && len(rep.s.Space.Pools) == 1:
		by = "rate: each uses every GPU"
	case rep.s.cheapest() && rep.s.pricesGiven():
		by = "price per hour, then rate"
	case rep.s.cheapest():
		by = "GPUs, then rate"
	case rep.s.pricesGiven():
		by = "cost per output token"
	}
	q := ""
	if rateMode {
		q = fmt.Sprintf(" meeting the SLO at %.4g req/s", rep.s.RateRPS)
	}
	_, err := fmt.Fprintf(w, "%d candidates: %d ranked%s (by %s), %d pruned below the top %d, %d rejected (reasons in %s)\n",
		len(rep.Rows), len(rep.Ranked), q, by, n[StatusPruned], rep.s.TopK, n[StatusRejected], ResultsFile)
	return err
}
