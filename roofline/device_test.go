package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Every record of the catalog is a device the model prices with nothing
// but its record: a GEMM, decode attention, an all-reduce, the host parts
// of a step and the issue costs all come out positive and finite.
func TestEveryRecordPrices(t *testing.T) {
	m, err := spec.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	ops := spec.LayerOps(m, spec.Layout{TP: 2}, 0)
	find := func(name string) *spec.Op {
		for i := range ops {
			if ops[i].Name == name {
				return &ops[i]
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	for _, n := range spec.DeviceNames() {
		rec, err := spec.LookupDevice(n)
		if err != nil {
			t.Fatal(err)
		}
		r := Roofline{Device: NewDevice(rec)}
		c := DefaultIssueCosts(rec)
		for _, p := range []struct {
			what string
			ms   float64
		}{
			{"mlp_up_proj at 4,096 tokens", r.KernelMs(find(spec.OpMLPUpProj), []float64{4096})},
			{"attn_decode, 64 x 2,048", r.KernelMs(find(spec.OpAttnDecode), []float64{64, 2048})},
			{"all_reduce of 1 MB", r.KernelMs(find(spec.OpAllReduce), []float64{1 << 20})},
			{"eager rope", r.EventMs(find(spec.OpAttnRope), []float64{16})},
			{"sampler of 32 sequences", HostOpMs(rec, spec.OpCPUSampler, 2, 32, 0, 32, m.VocabSize)},
			{"issue of a Triton kernel", c.KernelUs[spec.KernelTriton] / 1e3},
		} {
			if !(p.ms > 0) || math.IsInf(p.ms, 0) {
				t.Errorf("%s: %s priced %g ms", n, p.what, p.ms)
			}
		}
	}
}
