package simulate

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/cost"
)

// breakdownAcc adds up where an engine's stage time goes.
type breakdownAcc struct {
	stageSteps int64
	wallMs     float64
	attributed [cost.NumComponents]float64
	modelled   [cost.NumComponents]float64
	hostBound  int64 // stage steps whose launches outran the device
	graph      int64 // stage steps replayed as CUDA graphs
	part       [cost.NumComponents]float64
}

func (b *breakdownAcc) add(c *cost.StepCost, async, overlap bool, wallMs float64) {
	b.stageSteps++
	b.wallMs += wallMs
	for i, ms := range c.Ms {
		b.modelled[i] += ms
	}
	// Device components show in full; only launch and host time can hide.
	hb, ha, launch := c.Ms[cost.CompHostBefore], c.Ms[cost.CompHostAfter], c.Ms[cost.CompLaunch]
	d := c.DeviceMs()
	if launch > d {
		b.hostBound++
		b.attributed[cost.CompLaunch] += launch - d
	}
	switch {
	case !async:
		b.attributed[cost.CompHostBefore] += hb
		b.attributed[cost.CompHostAfter] += ha
	default:
		c.Attribute(async, overlap, &b.part)
		b.attributed[cost.CompHostBefore] += b.part[cost.CompHostBefore]
		b.attributed[cost.CompHostAfter] += b.part[cost.CompHostAfter]
	}
	if c.Graph {
		b.graph++
	}
}

func (b *breakdownAcc) merge(o *breakdownAcc) {
	b.stageSteps += o.stageSteps
	b.wallMs += o.wallMs
	b.hostBound += o.hostBound
	b.graph += o.graph
	for i := range b.attributed {
		b.attributed[i] += o.attributed[i]
		b.modelled[i] += o.modelled[i]
	}
}

// BreakdownRow is one component's part of the engine time.
type BreakdownRow struct {
	Component string `json:"component"`
	// WallMs is the component's part of the stage wall time: device
	// components in full, launch beyond the device time, host time the
	// forward pass does not hide. The rows add up to Breakdown.WallMs.
	WallMs float64 `json:"wall_ms"`
	Share  float64 `json:"share"`
	// MeanMs is WallMs per stage step; ModelledMeanMs is the component's
	// modelled time per stage step, hidden or not (launch and host time
	// can exceed their wall share).
	MeanMs         float64 `json:"mean_ms"`
	ModelledMeanMs float64 `json:"modelled_mean_ms"`
}

// Breakdown is where the engines of one role spend their step time.
type Breakdown struct {
	Role string `json:"role"`
	// StageSteps counts steps on every pipeline stage of every engine.
	StageSteps int64          `json:"stage_steps"`
	WallMs     float64        `json:"wall_ms"`
	Rows       []BreakdownRow `json:"rows"`
	// HostBoundSteps are stage steps whose kernel launches took longer than
	// the GPU work; GraphSteps replayed CUDA graphs.
	HostBoundSteps int64 `json:"host_bound_steps"`
	GraphSteps     int64 `json:"graph_steps"`
}

func (b *breakdownAcc) report(role string) Breakdown {
	copy(b.attributed[:cost.NumDeviceComponents], b.modelled[:cost.NumDeviceComponents])
	r := Breakdown{Role: role, StageSteps: b.stageSteps, WallMs: b.wallMs, HostBoundSteps: b.hostBound, GraphSteps: b.graph}
	n := float64(max(b.stageSteps, 1))
	for c := cost.Component(0); c < cost.NumComponents; c++ {
		row := BreakdownRow{Component: c.String(), WallMs: b.attributed[c], MeanMs: b.attributed[c] / n, ModelledMeanMs: b.modelled[c] / n}
		if b.wallMs > 0 {
			row.Share = b.attributed[c] / b.wallMs
		}
		r.Rows = append(r.Rows, row)
	}
	return r
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
		fmt.Fprintf(w, "  %d stage steps: %d host-bound (launches outran the GPU), %d CUDA-graph replays\n", b.StageSteps, b.HostBoundSteps, b.GraphSteps)
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
		return "launch (beyond GPU)"
	case "host_before":
		return "host before (schedule, inputs)"
	case "host_after":
		return "host after (sample, outputs)"
	}
	return name
}
