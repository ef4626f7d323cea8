package roofline

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestEventUs(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		pre, host, kernel, busy, gap float64
		wantRead, wantNext           float64
	}{
		{"idle GPU, host-bound", 4, 23, 2, 0, 3.6, 23, 0},
		{"idle GPU, kernel-bound", 15, 30, 65, 0, 3.6, 80, 50},
		{"GPU far behind: the kernel plus the gap", 4, 23, 5.5, 50, 3.6, 9.1, 36.1},
		{"GPU a little behind: the rest of the host time", 4, 23, 2.6, 6, 3.6, 17, 0},
	} {
		read, next := eventUs(tc.pre, tc.host, tc.kernel, tc.busy, tc.gap)
		if math.Abs(read-tc.wantRead) > 1e-9 || math.Abs(next-tc.wantNext) > 1e-9 {
			t.Errorf("%s: read %.2f us, next busy %.2f us; want %.2f, %.2f", tc.name, read, next, tc.wantRead, tc.wantNext)
		}
	}
}

// An op after a long kernel reads its own kernel plus the gap; timed in
// isolation it reads its host time.
func TestEventSequenceHidesHostBehindLongKernel(t *testing.T) {
	d, err := LookupDevice("h800")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d}
	up := spec.Op{Name: spec.OpMLPUpProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 2 * 11008, ElemBytes: 2}
	act := spec.Op{Name: spec.OpMLPAct, Family: spec.FamilyLinear, Kernels: 1, Width: 11008, ElemBytes: 2}
	one := []float64{1}
	ms, busy := r.EventSequence([]EventStep{{Op: &up, X: one}, {Op: &act, X: one}})
	alone := r.EventMs(&act, one)
	want := r.KernelMs(&act, one) + d.Curves.EventGapUs/1e3
	if busy[1] <= 0 || math.Abs(ms[1]-want) > 1e-9 || ms[1] >= alone {
		t.Errorf("act after the up projection: reads %.4f ms (busy %.1f us), want kernel + gap %.4f ms, below %.4f ms alone", ms[1], busy[1], want, alone)
	}
}

// The A800 profile's eager rows read through its own profiler loop gaps
// (profilerGaps): the TP8 MLP up projection, host-bound at 73-97 us from
// 1 to 4,096 tokens, is within 8% on average; through the H800 machine's
// gaps the GPU backlog of each pass outlived it (12.4%).
func TestAmpereProfilerGaps(t *testing.T) {
	d, err := LookupDevice("a800")
	if err != nil {
		t.Fatal(err)
	}
	mape, n := rowsMAPE(t, d, func(p realPoint) bool {
		return strings.Contains(p.profile, "a800") && p.meas == spec.CUDAEvent && p.op.Name == spec.OpMLPUpProj
	}, chainBusy)
	if n < 200 {
		t.Fatalf("%d A800 eager mlp_up_proj rows, want the file's 259", n)
	}
	if mape > 8 {
		t.Errorf("A800 eager mlp_up_proj: MAPE %.1f%%, want <= 8%%", mape)
	}
}
