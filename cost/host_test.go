package cost

import (
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Host time is never silently zero: by default it comes from roofline's host
// model of the device class, split before (schedule, inputs, hand-off) and
// after (sampling, outputs) the forward pass; a CPU-overhead profile's
// HOST_WALL predictors replace the parts they have; a calibration's host
// scale multiplies every part, its fixed host time per step replaces them.
func TestHostTimeSources(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 2}.Normalize()
	b := decodeShape(100, 200, 300, 400, 500, 600, 700, 800)
	stage := func(c OpCostConfig) (StepCost, runresult.CostModelReport) {
		c.Model, c.Layout, c.Device, c.Limits = m, l, d, testLimits
		cm, err := NewOpCostModel(c)
		if err != nil {
			t.Fatal(err)
		}
		var sc StepCost
		cm.StageCost(&b, 0, &sc)
		return sc, cm.Report()
	}
	host := func(op string) float64 { return roofline.HostOpMs(d, op, 2, 8, 0, 8, m.VocabSize) }
	c, r := stage(OpCostConfig{})
	before := host(spec.OpCPUSchedule) + host(spec.OpCPUPrepareInputs) + host(spec.OpCPURayComm)
	after := host(spec.OpCPUSampler) + host(spec.OpCPUProcessOutputs)
	if !near(c.Ms[CompHostBefore], before) || !near(c.Ms[CompHostAfter], after) || !(before > 0.1 && after > 0.1) {
		t.Errorf("default host %g + %g ms, want %g + %g", c.Ms[CompHostBefore], c.Ms[CompHostAfter], before, after)
	}
	if r.HostSource != HostFromDefault || !strings.Contains(r.HostNote, "0.04 ms") {
		t.Errorf("report host %q: %q", r.HostSource, r.HostNote)
	}
	// A profile with the schedule and sampler parts.
	prof := predSet{
		{Op: spec.OpCPUSchedule, Measurement: spec.HostWall, TP: 2}: linearPred{a: 0.5, b: 0.01},
		{Op: spec.OpCPUSampler, Measurement: spec.HostWall, TP: 2}:  linearPred{a: 0.25},
	}
	c, r = stage(OpCostConfig{HostPredictors: prof})
	if !near(c.Ms[CompHostBefore], 0.5+0.08+host(spec.OpCPUPrepareInputs)+host(spec.OpCPURayComm)) || !near(c.Ms[CompHostAfter], 0.25+host(spec.OpCPUProcessOutputs)) || r.HostSource != HostFromProfile {
		t.Errorf("profiled host %g + %g ms (%s)", c.Ms[CompHostBefore], c.Ms[CompHostAfter], r.HostSource)
	}
	// The host scale multiplies every part, profiled or default.
	c, r = stage(OpCostConfig{HostPredictors: prof, Calibration: runresult.Calibration{HostScale: 3}})
	if !near(c.Ms[CompHostBefore], 3*(0.5+0.08+host(spec.OpCPUPrepareInputs)+host(spec.OpCPURayComm))) || !near(c.Ms[CompHostAfter], 3*(0.25+host(spec.OpCPUProcessOutputs))) ||
		r.HostSource != HostFromProfile || !strings.Contains(r.HostNote, "x3 (host_scale)") {
		t.Errorf("scaled host %g + %g ms (%s: %s)", c.Ms[CompHostBefore], c.Ms[CompHostAfter], r.HostSource, r.HostNote)
	}
	c, r = stage(OpCostConfig{HostPredictors: prof, Calibration: runresult.Calibration{HostMsPerStep: 2}})
	if c.Ms[CompHostBefore] != 2 || c.Ms[CompHostAfter] != 0 || r.HostSource != HostFromCalibration || r.HostMsPerStep != 2 {
		t.Errorf("calibrated host %g + %g ms (%+v)", c.Ms[CompHostBefore], c.Ms[CompHostAfter], r)
	}
	if _, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, HostPredictors: predSet{}}); err == nil {
		t.Error("a host bundle without HOST_WALL predictors for the TP was accepted")
	}
}
