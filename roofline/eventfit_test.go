package roofline

import (
	"math"
	"sort"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// profilerForward is the order in which Vidur's MLP profiler (and
// Frontier's linear-op one) runs a row's ops in each forward pass
// (microsoft/vidur vidur/profiling/mlp/mlp_impl.py, GPTModel.forward and
// GPTBlock._forward_with_post_attn_norm): the embedding twice, the
// attention half with torch.randn_like(q) standing in for attention
// (untimed), the untimed residual add, the MLP, the timed residual add; the
// LM head after. Untimed steps run whether or not the row times the ops
// around them.
var profilerForward = []struct {
	op      string
	untimed bool
}{{spec.OpEmb, false}, {spec.OpEmb, false}, {spec.OpInputLayernorm, false}, {spec.OpAttnPreProj, false}, {spec.OpAttnRope, false},
	{"randn_like", true}, {spec.OpAttnPostProj, false}, {spec.OpAdd, true}, {spec.OpPostAttnLayernorm, false},
	{spec.OpMLPUpProj, false}, {spec.OpMLPAct, false}, {spec.OpMLPDownProj, false}, {spec.OpAdd, false}, {"lm_head_linear", false}}

// The profiler loop's untimed host time (the GPU catches up during it),
// fitted on the calibration rows of the H800 CUDA_EVENT linear files
// (fitProfilerGaps): an untimed eager op with a kernel
// (profilerUntimedOpUs), and the end of one forward pass to the start of
// the next (profilerPassGapUs).
var profilerUntimedOpUs, profilerPassGapUs = 8.9, 42.2

// profilerGaps returns the profiler loop's untimed host times on the
// machine of generation arch's profiles: the H800 files' (Hopper), and the
// A800 file's (Ampere: 29.8 and 53.6 us), which fitEventChain returns with
// Ampere's host terms on its calibration rows (session 7, with the shipped
// ampereCurves). That machine's host is slower everywhere (its fitted host
// terms run 1.5-3x Hopper's); scored with the H800 machine's gaps instead,
// its TP8 eager rows' GPU backlog outlives the pass, and mlp_up reads 12.4%
// off rather than 5.9%.
func profilerGaps(arch string) (untimedOpUs, passGapUs float64) {
	if arch == spec.ArchAmpere {
		return 29.8, 53.6
	}
	return profilerUntimedOpUs, profilerPassGapUs
}

// sequenceRow links the measured ops of one CUDA_EVENT linear row into the
// profiler's forward sequence and sets each one's GPU backlog under the
// shipped curves.
func sequenceRow(pts []realPoint) {
	if len(pts) == 0 {
		return
	}
	at := map[string]int{}
	for i, p := range pts {
		at[p.op.Name] = i
	}
	var seq []EventStep
	calls := make([][]int, len(pts))
	ref := pts[0].op // any op of the row: its hidden width
	untimedUs, passUs := profilerGaps(archOfProfileDevice(pts[0].device))
	for _, f := range profilerForward {
		if f.untimed {
			o := spec.Op{Name: spec.OpAdd, Family: spec.FamilyLinear, Kernels: 1, Width: ref.Width, ElemBytes: 2}
			if i, ok := at[spec.OpAttnRope]; ok && f.op == "randn_like" {
				o.Width = pts[i].op.Width // q's width: an elementwise write, priced as the add class (approximation)
			}
			if i, ok := at[spec.OpEmb]; ok && f.op == spec.OpAdd {
				o.Width = pts[i].op.Width
			}
			seq = append(seq, EventStep{Op: &o, X: pts[0].x, IdleHostUs: untimedUs, Untimed: true})
			continue
		}
		if i, ok := at[f.op]; ok {
			calls[i] = append(calls[i], len(seq))
			seq = append(seq, EventStep{Op: &pts[i].op, X: pts[i].x})
		}
	}
	seq[0].IdleHostUs += passUs
	d, err := LookupDevice(pts[0].device)
	if err != nil || d.Curves.EventGapUs == 0 {
		return // host terms fitted on ops timed in isolation (Curves.EventGapUs)
	}
	_, busy := Roofline{Device: d, NCCL: true}.EventSequence(seq)
	for i := range pts {
		pts[i].seq, pts[i].calls = seq, calls[i]
		pts[i].busyUs = nil
		for _, c := range calls[i] {
			pts[i].busyUs = append(pts[i].busyUs, busy[c])
		}
	}
}

// chainBusy is the GPU backlog each call of p meets under d's curves
// (none when p is not part of a sequence or d's host terms were fitted on
// ops in isolation).
func chainBusy(d *Device, p realPoint) []float64 {
	if len(p.calls) == 0 || d.Curves.EventGapUs == 0 {
		return nil
	}
	_, all := Roofline{Device: d, NCCL: true}.EventSequence(p.seq)
	busy := make([]float64, len(p.calls))
	for i, c := range p.calls {
		busy[i] = all[c]
	}
	return busy
}

// predictPoint is the model's time of p on d with the GPU backlog busyUs
// at each of p's calls (one value each; none: timed in isolation), their
// mean when p's op runs more than once a pass (the median of samples split
// evenly between two calls lies between them).
func predictPoint(d *Device, p realPoint, busyUs []float64) float64 {
	r := Roofline{Device: d, NCCL: true, LegacyStack: p.legacyTorch, AttentionBackend: p.backend}
	r.RepeatedBlockBytes = p.blockBytes
	if p.meas != spec.CUDAEvent || len(busyUs) == 0 {
		return traceReadingMs(p, r.ContextTimeMs(&p.op, p.x, p.meas, p.ctx, p.path))
	}
	var s float64
	for _, b := range busyUs {
		r.BusyUs = b
		s += r.ContextTimeMs(&p.op, p.x, p.meas, p.ctx, p.path)
	}
	return s / float64(len(busyUs))
}

// fitEventChain refits, jointly, the CUDA_EVENT host terms of the ops of
// arch's eager linear rows, Curves.EventGapUs and the profiler loop's
// untimed host times (profilerUntimedOpUs, profilerPassGapUs), with each
// op's reading computed through the profiler's forward sequence
// (eventchain.go): an op's host time to its end event is seen mostly in
// the op after it (how far behind the GPU is left), so the ops of a row are
// fitted together. It minimises the mean over (profile, operator) groups
// of the MAPE on the calibration rows and returns the curves and the two
// profiler gaps.
func fitEventChain(pts []realPoint, arch string, cv Curves) (Curves, float64, float64) {
	type row struct {
		seq []EventStep
		pts []realPoint
	}
	rows := map[*EventStep]*row{}
	names := map[string]bool{}
	var devName string
	for _, p := range pts {
		if p.heldOut() || len(p.calls) == 0 || archOfProfileDevice(p.device) != arch {
			continue
		}
		k := &p.seq[0]
		if rows[k] == nil {
			rows[k] = &row{seq: p.seq}
		}
		rows[k].pts = append(rows[k].pts, p)
		names[p.op.Name] = true
		devName = p.device
	}
	if len(rows) == 0 {
		u, p := profilerGaps(arch)
		return cv, u, p
	}
	var ops []string
	for n := range names {
		ops = append(ops, n)
	}
	sort.Strings(ops)
	hosts := make([]HostTerms, len(ops))
	for i, n := range ops {
		hosts[i] = cv.host(n)
	}
	untimed, pass := profilerGaps(arch)
	gap := math.Max(cv.EventGapUs, 1)
	fs := []field{{&gap, false, 0.1, 50}, {&untimed, false, 0.1, 100}, {&pass, false, 0.1, 200}}
	for i := range hosts {
		fs = append(fs, field{&hosts[i].PreUs, false, minHostUs, maxHostUs}, field{&hosts[i].Us, false, minHostUs, maxHostUs})
	}
	d, err := LookupDevice(devName)
	if err != nil {
		return cv, untimed, pass
	}
	apply := func() {
		d.Curves = cv
		d.Curves.EventGapUs = gap
		d.Curves.Host = map[string]HostTerms{}
		for n, h := range cv.Host {
			d.Curves.Host[n] = h
		}
		for i, n := range ops {
			h := hosts[i]
			h.Us = math.Max(h.Us, h.PreUs) // the end event is recorded after the launch
			d.Curves.Host[n] = h
		}
	}
	var list []*row
	for _, r := range rows {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].pts[0], list[j].pts[0]
		if a.file != b.file {
			return a.file < b.file
		}
		return a.line < b.line
	})
	obj := func(x []float64) float64 {
		for i, f := range fs {
			f.set(x[i])
		}
		apply()
		type acc struct {
			s float64
			n int
		}
		g := map[[2]string]*acc{}
		for _, r := range list {
			seq := append([]EventStep(nil), r.seq...)
			for i := range seq {
				if seq[0].Sync {
					break // the attention profiler's run (attnchain_test.go): its own host gaps
				}
				if seq[i].Untimed {
					seq[i].IdleHostUs = untimed
				} else {
					seq[i].IdleHostUs = 0
				}
			}
			if !seq[0].Sync {
				seq[0].IdleHostUs += pass
			}
			ms, _ := Roofline{Device: d, NCCL: true}.EventSequence(seq)
			for _, p := range r.pts {
				var pred float64
				for _, c := range p.calls {
					pred += ms[c] / float64(len(p.calls))
				}
				k := [2]string{p.profile, p.op.Name}
				if g[k] == nil {
					g[k] = &acc{}
				}
				g[k].s += math.Abs(pred-p.ms) / p.ms
				g[k].n++
			}
		}
		keys := make([][2]string, 0, len(g))
		for k := range g {
			keys = append(keys, k)
		}
		// a fixed order: float sums, and so the fit, depend on it
		sort.Slice(keys, func(i, j int) bool {
			return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
		})
		var s float64
		for _, k := range keys {
			s += g[k].s / float64(g[k].n)
		}
		return s / float64(len(g))
	}
	x0 := make([]float64, len(fs))
	for i, f := range fs {
		x0[i] = f.get()
	}
	best := nelderMead(obj, x0, 1500)
	for i, f := range fs {
		f.set(best[i])
	}
	apply()
	return d.Curves, untimed, pass
}

// rowsMAPE is the mean absolute percentage error, in percent, of the
// built-in model over the real rows keep selects, each priced as
// predictPoint does (busy, when not nil, gives a row's event-chain
// backlog), and how many rows that was.
func rowsMAPE(t testing.TB, d *Device, keep func(realPoint) bool, busy func(*Device, realPoint) []float64) (float64, int) {
	var sum float64
	n := 0
	for _, p := range loadRealPoints(t) {
		if !keep(p) {
			continue
		}
		var b []float64
		if busy != nil {
			b = busy(d, p)
		}
		sum += math.Abs(predictPoint(d, p, b)-p.ms) / p.ms
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return 100 * sum / float64(n), n
}
