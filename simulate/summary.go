package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// SummarySchemaVersion is the version of summary.json's layout.
const SummarySchemaVersion = 1

// Summary is the result of a run: summary.json.
type Summary struct {
	SchemaVersion int             `json:"schema_version"`
	Config        Config          `json:"config"`
	CostModel     CostModelReport `json:"cost_model"`
	Memory        MemoryReport    `json:"memory"`
	Metrics       Metrics         `json:"metrics"`
	Replicas      []ReplicaReport `json:"replicas"`
}

// WriteSummary writes s as indented JSON to path, atomically.
func WriteSummary(path string, s *Summary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("summary %s: %w", path, err)
	}
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
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
	fmt.Fprintf(tw, "model\t%s on %s, %s, %d replica(s), router %s\n", c.Model, c.Device, c.Layout, c.Layout.DP, c.Router)
	fmt.Fprintf(tw, "cost model\t%s\n", s.CostModel.Label)
	if n := len(s.CostModel.RooflineFallbacks); n > 0 {
		fmt.Fprintf(tw, "roofline fallbacks\t%d ops the bundle lacks (listed in summary.json)\n", n)
	}
	if n := len(s.CostModel.Extrapolated); n > 0 {
		fmt.Fprintf(tw, "extrapolated\t%d ops queried outside their sampled domain (listed in summary.json)\n", n)
	}
	cm := &s.CostModel
	fmt.Fprintf(tw, "step model\t%s execution, %s op times, launch %g us/kernel, host %g ms/step\n",
		cm.ExecutionMode, cm.Measurement, cm.LaunchUs, cm.HostMsPerStep)
	e := &c.Engine
	fmt.Fprintf(tw, "engine\tmax_num_batched_tokens %d, max_num_seqs %d, max_model_len %d, block_size %d, chunked prefill %v\n",
		e.MaxNumBatchedTokens, e.MaxNumSeqs, e.MaxModelLen, e.BlockSize, e.EnableChunkedPrefill)
	fmt.Fprintf(tw, "KV cache\t%d blocks (%d tokens) per replica, peak usage %.1f%%\n",
		s.Memory.Blocks, s.Memory.Blocks*s.Memory.BlockSize, 100*m.PeakKVUsage)
	fmt.Fprintf(tw, "requests\t%d arrived, %d completed, %d rejected (longer than max_model_len)\n", m.Arrived, m.Completed, m.Rejected)
	fmt.Fprintf(tw, "makespan\t%.3f s, %d engine steps, %d preemptions\n", m.MakespanS, m.Steps, m.Preemptions)
	fmt.Fprintf(tw, "throughput\t%.3f req/s, %.1f output tok/s, %.1f total tok/s\n", m.RequestThroughputPerS, m.OutputTokenThroughputPerS, m.TotalTokenThroughputPerS)
	fmt.Fprintf(tw, "concurrency\tmean %.2f, peak %d requests\n", m.MeanConcurrency, m.PeakConcurrency)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "latency (ms)\tmean\tP50\tP90\tP95\tP99")
	for _, r := range []struct {
		name string
		st   Stats
	}{{"TTFT", m.TTFTMs}, {"TPOT", m.TPOTMs}, {"ITL", m.ITLMs}, {"E2E", m.E2EMs}} {
		if r.st.Count == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", r.name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n", r.name, r.st.Mean, r.st.P50, r.st.P90, r.st.P95, r.st.P99)
	}
	return tw.Flush()
}
