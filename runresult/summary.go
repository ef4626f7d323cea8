package runresult

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/atomicfile"
)

// SummarySchemaVersion is the version of summary.json's layout.
const SummarySchemaVersion = 3

// Summary is the result of a run: summary.json.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	Config        Config `json:"config"`
	// Workload names what the run served: the trace or generated
	// workload, the arrival process and the request count.
	Workload  WorkloadReport  `json:"workload"`
	CostModel CostModelReport `json:"cost_model"`
	Memory    MemoryReport    `json:"memory"`
	Metrics   Metrics         `json:"metrics"`
	Replicas  []ReplicaReport `json:"replicas"`
	// DecodeCostModel and DecodeMemory are the decode instances' in a
	// disaggregated run (CostModel and Memory are then the prefill
	// instances').
	DecodeCostModel *CostModelReport `json:"decode_cost_model,omitempty"`
	DecodeMemory    *MemoryReport    `json:"decode_memory,omitempty"`
	// Breakdown is where step time goes, per engine role.
	Breakdown []Breakdown `json:"breakdown"`
	// Speculative is the run's speculative decoding (nil: none).
	Speculative *SpeculativeReport `json:"speculative,omitempty"`
}

// WorkloadReport names what a run served.
type WorkloadReport struct {
	// Source is "trace PATH" or "NAME (generated)".
	Source string `json:"source"`
	// Arrivals is the arrival process: "poisson 4 req/s", "replay (the
	// trace's recorded times)", "all at t=0 (...)", a closed loop.
	Arrivals string `json:"arrivals"`
	// Requests is the number of requests that arrived.
	Requests int `json:"requests"`
}

// WriteSummary writes s as indented JSON to path, atomically.
func WriteSummary(path string, s *Summary) error {
	f, err := CreateSummary(path, s)
	if err != nil {
		return err
	}
	return f.Commit()
}

// CreateSummary writes s as indented JSON to a temporary file beside path,
// for the caller to commit with the rest of a run's outputs.
func CreateSummary(path string, s *Summary) (*atomicfile.File, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("summary %s: %w", path, err)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Abort()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return f, nil
}

// ReadSummary reads a summary.json written by WriteSummary.
func ReadSummary(path string) (*Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("summary %s: %w", path, err)
	}
	var s Summary
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("summary %s: %w", path, err)
	}
	if s.SchemaVersion != SummarySchemaVersion {
		return nil, fmt.Errorf("summary %s: schema version %d, this ftk reads %d", path, s.SchemaVersion, SummarySchemaVersion)
	}
	return &s, nil
}

// WriteText prints the run's summary table for a terminal.
func (s *Summary) WriteText(w io.Writer) error {
	c, m := &s.Config, &s.Metrics
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if c.Mode == ModeDisaggregated {
		d := &c.Disaggregation
		fmt.Fprintf(tw, "model\t%s on %s, disaggregated: %d prefill instance(s) %s, %d decode instance(s) %s, router %s\n",
			c.Model, c.Device, d.PrefillInstances, d.PrefillLayout, d.DecodeInstances, d.DecodeLayout, c.Router)
		fmt.Fprintf(tw, "KV link\t%g GB/s per prefill instance, %g us per transfer, shared fairly by concurrent transfers\n", d.KVLinkGBps, d.KVLinkLatencyUs)
	} else {
		fmt.Fprintf(tw, "model\t%s on %s, %s, %d replica(s), router %s\n", c.Model, c.Device, c.Layout, c.Layout.DP, c.Router)
	}
	wr := &s.Workload
	arrivals := wr.Arrivals
	if arrivals == "" {
		arrivals = "arrival process not recorded"
	}
	fmt.Fprintf(tw, "workload\t%s, %s, %d requests\n", wr.Source, arrivals, wr.Requests)
	writeCostModel(tw, "", &s.CostModel)
	if s.DecodeCostModel != nil {
		writeCostModel(tw, "decode ", s.DecodeCostModel)
	}
	e := &c.Engine
	fmt.Fprintf(tw, "engine\tmax_num_batched_tokens %d, max_num_seqs %d, max_model_len %d, block_size %d, chunked prefill %v, async scheduling %v",
		e.MaxNumBatchedTokens, e.MaxNumSeqs, e.MaxModelLen, e.BlockSize, e.EnableChunkedPrefill, e.AsyncScheduling)
	if v := c.VLLMVersion; v != "" {
		fmt.Fprintf(tw, ", vLLM %s defaults", v)
	}
	fmt.Fprintln(tw)
	if s.DecodeMemory != nil {
		fmt.Fprintf(tw, "KV cache\t%d blocks per prefill instance, %d per decode instance, peak usage %.1f%%\n",
			s.Memory.Blocks, s.DecodeMemory.Blocks, 100*m.PeakKVUsage)
	} else {
		fmt.Fprintf(tw, "KV cache\t%d blocks (%d tokens) per replica, peak usage %.1f%%\n",
			s.Memory.Blocks, s.Memory.Blocks*s.Memory.BlockSize, 100*m.PeakKVUsage)
	}
	if pc := &m.PrefixCache; pc.Enabled {
		fmt.Fprintf(tw, "prefix cache\thit rate %.1f%% (%d of %d prompt tokens cached at first scheduling), %d evictions",
			100*pc.HitRate, pc.HitTokens, pc.QueriedTokens, pc.Evictions)
		if pc.PreemptedLookups > 0 {
			fmt.Fprintf(tw, "; preempted requests found %d of %d tokens", pc.PreemptedHitTokens, pc.PreemptedQueriedTokens)
		}
		fmt.Fprintln(tw)
	} else {
		fmt.Fprintln(tw, "prefix cache\toff")
	}
	if pc := &m.PrefixCache; pc.HostTier {
		fmt.Fprintf(tw, "host tier\t%d blocks (%d tokens) per replica at %g GB/s: hit rate %.1f%% (%d prompt tokens loaded, not recomputed), %d blocks stored, %d loaded, %d evicted\n",
			s.Memory.HostBlocks, s.Memory.HostBlocks*s.Memory.BlockSize, s.Memory.HostLinkGBps, 100*pc.HostHitRate, pc.HostHitTokens,
			pc.HostStoredBlocks, pc.HostLoadedBlocks, pc.HostEvictions)
	}
	if sp := s.Speculative; sp != nil {
		rec := "given"
		if sp.AcceptanceRecord != "" {
			rec = "record " + sp.AcceptanceRecord
		}
		fmt.Fprintf(tw, "speculative\t%s, K=%d draft tokens a step (acceptance %v, %s); drafter: %s\n", sp.Method, sp.NumSpeculativeTokens, sp.Acceptance, rec, sp.Drafter)
		fmt.Fprintf(tw, "spec decode\tdraft acceptance rate %.1f%%, mean acceptance length %.2f, per-position acceptance rate", 100*sp.DraftAcceptanceRate, sp.MeanAcceptanceLength)
		for _, p := range sp.AcceptanceRatePerPosition {
			fmt.Fprintf(tw, " %.3f", p)
		}
		fmt.Fprintf(tw, " (%d drafts, %d of %d draft tokens accepted)\n", sp.Drafts, sp.AcceptedTokens, sp.DraftTokens)
	}
	fmt.Fprintf(tw, "requests\t%d arrived, %d completed, %d rejected (longer than max_model_len)\n", m.Arrived, m.Completed, m.Rejected)
	fmt.Fprintf(tw, "makespan\t%.3f s, %d engine steps, %d preemptions\n", m.MakespanS, m.Steps, m.Preemptions)
	fmt.Fprintf(tw, "throughput\t%.3f req/s, %.1f output tok/s, %.1f total tok/s\n", m.RequestThroughputPerS, m.OutputTokenThroughputPerS, m.TotalTokenThroughputPerS)
	fmt.Fprintf(tw, "concurrency\tmean %.2f, peak %d requests\n", m.MeanConcurrency, m.PeakConcurrency)
	if o := m.Overload; o != nil {
		fmt.Fprintf(tw, "WARNING\toffered load exceeds capacity: %.2f req/s offered, %.2f req/s completed; waiting requests grew from %.0f to %.0f (mean over the 2nd and the last quarter of the arrivals): the waiting queue grows without bound, so latencies grow with --num-requests\n",
			o.OfferedRatePerS, o.CompletedRatePerS, o.WaitingSecondQuarter, o.WaitingLastQuarter)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "latency (ms)\tmean\tP50\tP90\tP95\tP99")
	rows := []struct {
		name string
		st   Stats
	}{{"TTFT", m.TTFTMs}, {"TPOT", m.TPOTMs}, {"ITL", m.ITLMs}, {"E2E", m.E2EMs}}
	if m.KVTransfer != nil {
		rows = append(rows, struct {
			name string
			st   Stats
		}{"KV transfer", m.KVTransfer.TransferMs})
	}
	for _, r := range rows {
		if r.st.Count == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", r.name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n", r.name, r.st.Mean, r.st.P50, r.st.P90, r.st.P95, r.st.P99)
	}
	if e := m.E2EMs.PercentileErrorPct; e > 0 {
		fmt.Fprintf(tw, "percentiles\tfrom log histograms, within %.2f%% of exact (%d requests: more than are kept for exact percentiles); means exact\n", e, m.E2EMs.Count)
	}
	return tw.Flush()
}

// writeCostModel prints how steps are priced.
func writeCostModel(tw io.Writer, prefix string, cm *CostModelReport) {
	fmt.Fprintf(tw, "%scost model\t%s\n", prefix, cm.Label)
	fmt.Fprintf(tw, "%sprofiles\t%s\n", prefix, cm.Profiles.Label)
	if l := cm.Profiles.KernelsLabel; l != "" {
		fmt.Fprintf(tw, "%skernels\t%s\n", prefix, l)
	}
	for _, n := range cm.Profiles.Limits {
		fmt.Fprintf(tw, "%sprofiled limits\t%s\n", prefix, n)
	}
	if n := len(cm.RooflineFallbacks); n > 0 {
		fmt.Fprintf(tw, "%sroofline fallbacks\t%d ops the bundle lacks (listed in summary.json)\n", prefix, n)
	}
	if n := len(cm.Extrapolated); n > 0 {
		fmt.Fprintf(tw, "%sextrapolated\t%d ops queried outside their sampled domain (listed in summary.json)\n", prefix, n)
	}
	fmt.Fprintf(tw, "%sexecution\t%s, %s op times; %s\n", prefix, cm.ExecutionMode, cm.Measurement, cm.LaunchNote)
	fmt.Fprintf(tw, "%shost\t%s\n", prefix, cm.HostNote)
	fmt.Fprintf(tw, "%shost issue\t%s: %s\n", prefix, cm.IssueNote, cm.IssueCosts.Describe())
	if mo := cm.MoE; mo != nil {
		r := mo.Routing
		switch {
		case mo.Skew != 0:
			r = fmt.Sprintf("%s (Zipf exponent %g)", r, mo.Skew)
		case mo.Histogram != "":
			r = fmt.Sprintf("%s of %s", r, mo.Histogram)
		}
		fmt.Fprintf(tw, "%sMoE\trouting %s, EP communication %s; gating context", prefix, r, mo.All2AllBackend)
		for i, g := range cm.GatingContexts {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(tw, "%s %s %s (%s)", sep, g.Op, g.Context, g.Source)
		}
		fmt.Fprintln(tw)
	}
}

// WriteBreakdown prints the step-time breakdown tables of a run.
func (s *Summary) WriteBreakdown(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, b := range s.Breakdown {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "step time, %s engines\t  share\t ms/step\tmodelled ms/step\n", b.Role)
		for _, r := range b.Rows {
			if r.ModelledMeanMs == 0 && r.WallMs == 0 {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%6.1f%%\t%8.3f\t%8.3f\n", componentLabel(r.Component), 100*r.Share, r.MeanMs, r.ModelledMeanMs)
		}
		fmt.Fprintf(tw, "  total\t%6.1f%%\t%8.3f\t\n", 100.0, b.WallMs/float64(max(b.StageSteps, 1)))
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %d stage steps: %d host-bound (issuing took longer than the GPU work, %.1f%%), %d CUDA-graph replays\n",
			b.StageSteps, b.HostBoundSteps, 100*float64(b.HostBoundSteps)/float64(max(b.StageSteps, 1)), b.GraphSteps)
	}
	role := "replica"
	if len(s.Breakdown) > 0 {
		role = s.Breakdown[0].Role
	}
	for _, ot := range []struct {
		role string
		cm   *CostModelReport
	}{{role, &s.CostModel}, {"decode", s.DecodeCostModel}} {
		if ot.cm != nil && ot.cm.OpTable != nil {
			fmt.Fprintln(w)
			if err := WriteOpTable(w, ot.role, ot.cm.OpTable); err != nil {
				return err
			}
		}
	}
	if t := s.Metrics.KVTransfer; t != nil {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "KV transfers (%d, %.2f MB mean)\t    mean\t     P50\t     P99\n", t.TransferMs.Count, t.MeanBytes/1e6)
		fmt.Fprintf(tw, "  transfer ms\t%8.3f\t%8.3f\t%8.3f\n", t.TransferMs.Mean, t.TransferMs.P50, t.TransferMs.P99)
		fmt.Fprintf(tw, "  wait for decode blocks ms\t%8.3f\t%8.3f\t%8.3f\n", t.WaitMs.Mean, t.WaitMs.P50, t.WaitMs.P99)
	}
	return tw.Flush()
}

// componentLabel names a component in the breakdown table.
func componentLabel(name string) string {
	switch name {
	case "launch":
		return "host issue (beyond GPU)"
	case "host_before":
		return "host before (schedule, inputs)"
	case "host_after":
		return "host after (sample, outputs)"
	}
	return name
}
