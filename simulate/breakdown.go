package simulate

import (
	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
)

// breakdownAcc adds up where an engine's stage time goes.
type breakdownAcc struct {
	stageSteps int64
	wallMs     float64
	attributed [cost.NumComponents]float64
	modelled   [cost.NumComponents]float64
	hostBound  int64 // stage steps whose host issue outlasted the device work
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
	hb, ha := c.Ms[cost.CompHostBefore], c.Ms[cost.CompHostAfter]
	d := c.DeviceMs()
	if c.Ms[cost.CompLaunch] > d {
		b.hostBound++
	}
	b.attributed[cost.CompLaunch] += c.GPUMs() - d
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

func (b *breakdownAcc) report(role string) runresult.Breakdown {
	copy(b.attributed[:cost.NumDeviceComponents], b.modelled[:cost.NumDeviceComponents])
	r := runresult.Breakdown{Role: role, StageSteps: b.stageSteps, WallMs: b.wallMs, HostBoundSteps: b.hostBound, GraphSteps: b.graph}
	n := float64(max(b.stageSteps, 1))
	for c := cost.Component(0); c < cost.NumComponents; c++ {
		row := runresult.BreakdownRow{Component: c.String(), WallMs: b.attributed[c], MeanMs: b.attributed[c] / n, ModelledMeanMs: b.modelled[c] / n}
		if b.wallMs > 0 {
			row.Share = b.attributed[c] / b.wallMs
		}
		r.Rows = append(r.Rows, row)
	}
	return r
}
