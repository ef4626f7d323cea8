package cost

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// ProfileAIConfigurator is the profiling backend of AIConfigurator's kernel
// tables, as the run's summary names it.
const ProfileAIConfigurator = "aiconfigurator"

// opPredictorSet is a PredictorSet that prices an op from its shape (the
// per-GPU GEMM, attention, MoE and collective dimensions spec.Op carries)
// rather than from a key fitted on one model: kernel tables.
type opPredictorSet interface {
	OpPredictor(o *spec.Op) (OpPredictor, bool)
}

// measuredAs is a PredictorSet that states its measurement type.
type measuredAs interface {
	Measurement() string
}

// KernelTables prices ops from AIConfigurator's shape-indexed kernel tables
// (package kerneldb) for any catalog model: each op looks up the kernel of
// its shape and dtype, exactly where measured, interpolated or scaled
// between measured shapes, extrapolated past them by kerneldb's stated
// rule. Ops the tables do not hold (norms, activations, rotary embedding,
// routing, EP exchange, send/recv) and dtypes they lack are
// left to the built-in device model; Coverage lists both.
//
// The tables time kernels replayed in CUDA graphs: KERNEL_ONLY times, the
// launch term priced apart (issue.go).
type KernelTables struct {
	K      *kerneldb.Kernels
	Dir    string
	device string
	model  *spec.Model
}

// LoadKernelTables opens the kernel database at dir (an AIConfigurator
// <gpu> folder or ftk ingest's copy of one) for vLLM version (kerneldb's
// version rule; "" takes the newest), refusing a database of another
// device than the simulation's.
func LoadKernelTables(dir, version string, model *spec.Model, device *spec.Device) (*KernelTables, error) {
	db, err := kerneldb.Open(dir)
	if err != nil {
		return nil, err
	}
	k, err := kerneldb.Load(db, version)
	if err != nil {
		return nil, err
	}
	name := ""
	for _, guess := range []string{db.GPU, strings.TrimSuffix(db.GPU, "_sxm"), k.Device} {
		if d, err := spec.LookupDevice(guess); err == nil {
			name = d.Name
			break
		}
	}
	if name != device.Name {
		return nil, fmt.Errorf("kernel tables %s: measured on %s (%s), the simulation is of %s: give the database of that GPU", dir, k.Device, db.GPU, device.Name)
	}
	return &KernelTables{K: k, Dir: dir, device: name, model: model}, nil
}

// Predictor implements PredictorSet: kernel tables answer by op shape
// (OpPredictor), never by a fitted key.
func (t *KernelTables) Predictor(spec.OpKey) (OpPredictor, bool) { return nil, false }

// Keys implements PredictorSet: no fitted keys.
func (t *KernelTables) Keys() []spec.OpKey { return nil }

// Measurement implements measuredAs.
func (t *KernelTables) Measurement() string { return spec.KernelOnly }

// Provenance implements provenanced.
func (t *KernelTables) Provenance() (string, []string) {
	return t.device, []string{ProfileAIConfigurator}
}

// Label implements labelled: the tables and the vLLM version folder each
// was read from, with how the folder was chosen.
func (t *KernelTables) Label() string {
	var b strings.Builder
	fmt.Fprintf(&b, "AIConfigurator kernel tables of %s (%s):", t.device, t.K.Device)
	for i, r := range t.K.Resolutions {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s vLLM %s", r.Table, r.Measured)
		if r.Note != "" {
			fmt.Fprintf(&b, " (%s)", r.Note)
		}
	}
	return b.String()
}

// KernelSources implements kernelSourced: the kernel source of every
// table and dtype the tables price with.
func (t *KernelTables) KernelSources() []string {
	var out []string
	for _, s := range t.K.Sources {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// gemmDtype is the gemm_perf dtype of the model's layer GEMMs.
func gemmDtype(m *spec.Model) string {
	q := strings.ToLower(m.Quantization)
	switch {
	case !m.FP8Compute:
		return "bfloat16"
	case strings.Contains(q, "int8"):
		return "int8"
	case strings.Contains(q, "block"):
		return "fp8_block"
	}
	return "fp8"
}

func kvDtype(m *spec.Model) string {
	if m.KVBytes == 1 {
		return "fp8"
	}
	return "bfloat16"
}

// OpPredictor implements opPredictorSet: the predictor of op o, or false
// when the tables hold no kernel of its kind and dtype.
func (t *KernelTables) OpPredictor(o *spec.Op) (OpPredictor, bool) {
	var p tablePredictor
	m := t.model
	switch {
	case o.Name == spec.OpAttnPrefill && !m.IsMLA():
		p = &tableAttention{t: t, o: *o, kv: kvDtype(m), context: true}
	case o.Name == spec.OpAttnDecode && !m.IsMLA():
		p = &tableAttention{t: t, o: *o, kv: kvDtype(m)}
	case (o.Name == spec.OpAttnPrefill || o.Name == spec.OpAttnDecode) && m.IsMLA():
		p = &tableMLA{t: t, heads: o.QHeads, kv: kvDtype(m), context: o.Name == spec.OpAttnPrefill}
	case o.Name == spec.OpMoEGroupedGEMM:
		dt := gemmDtype(m)
		if !o.FP8 {
			dt = "bfloat16"
		}
		p = &tableMoE{t: t, o: *o, dtype: dt, hidden: m.HiddenSize, inter: m.MoEIntermediateSize}
	case o.Name == spec.OpMoEShuffling:
		// vLLM's fused_experts aligns the routed tokens (moe_align_block_size)
		// inside the fused-MoE call the moe table times.
		dt := gemmDtype(m)
		if m.WeightBytes != 1 {
			dt = "bfloat16"
		}
		ep := max(o.Experts/max(o.LocalExperts, 1), 1)
		if ms, _ := t.K.MoE(dt, "balanced", m.HiddenSize, m.MoEIntermediateSize, o.TopK, o.Experts, 1, ep, 64); !math.IsNaN(ms) {
			return zeroPredictor{in: kerneldb.TableMoE + "'s fused-MoE call"}, true
		}
		return nil, false
	case o.Name == spec.OpAllReduce && !o.CrossNode:
		p = &tableAllReduce{t: t, workers: o.Workers}
	case o.N > 0 && o.K > 0 && o.Family == spec.FamilyLinear || o.Name == spec.OpMoEGatingLinear:
		dt := "bfloat16"
		if o.FP8 && o.Name != spec.OpMoEGatingLinear {
			dt = gemmDtype(m)
		}
		p = &tableGEMM{t: t, dtype: dt, n: float64(o.N), k: float64(o.K)}
	default:
		return nil, false
	}
	if ms := p.PredictMs(probe(o)); math.IsNaN(ms) {
		return nil, false
	}
	return p, true
}

// probe is a typical query of o, to tell covered from uncovered at load.
func probe(o *spec.Op) []float64 {
	switch o.Name {
	case spec.OpAttnPrefill:
		return []float64{0, 512}
	case spec.OpAttnDecode:
		return []float64{8, 1024}
	case spec.OpAllReduce:
		return []float64{1 << 16}
	case spec.OpMoEGroupedGEMM:
		return []float64{64, 8}
	}
	return []float64{64}
}

// counted counts the lookups a predictor answered past its table.
type counted struct{ n atomic.Int64 }

func (c *counted) note(ms float64, f kerneldb.Fit) float64 {
	if f == kerneldb.Extrapolated {
		c.n.Add(1)
	}
	return ms
}

// tablePredictor is a predictor over one kernel table.
type tablePredictor interface {
	OpPredictor
	lookup(x []float64) (float64, kerneldb.Fit)
	table() string
}

// Extrapolated implements extrapolationCounter.
func (c *counted) Extrapolated() int64 { return c.n.Load() }

// zeroPredictor prices an op another table's row includes.
type zeroPredictor struct{ in string }

func (zeroPredictor) PredictMs([]float64) float64 { return 0 }

func (zeroPredictor) lookup([]float64) (float64, kerneldb.Fit) { return 0, kerneldb.Exact }

func (z zeroPredictor) table() string { return "0: inside " + z.in }

type tableGEMM struct {
	counted
	t     *KernelTables
	dtype string
	n, k  float64
}

func (p *tableGEMM) PredictMs(x []float64) float64 { return p.note(p.lookup(x)) }

func (p *tableGEMM) lookup(x []float64) (float64, kerneldb.Fit) {
	if x[0] <= 0 {
		return 0, kerneldb.Exact
	}
	return p.t.K.GEMM(p.dtype, x[0], p.n, p.k)
}

func (p *tableGEMM) table() string {
	return fmt.Sprintf("%s %s [%s], N=%g K=%g", kerneldb.TableGEMM, p.dtype, p.t.K.Sources[kerneldb.TableGEMM+"/"+p.dtype], p.n, p.k)
}

// tableAttention prices attention from the context or generation table.
// A prefill of chunk new tokens after ctx cached ones is looked up as one
// sequence of sqrt(chunk*(chunk+2*ctx)) tokens, the prompt length whose
// causal attention does the same work (chunk*(ctx+chunk/2) query-key
// pairs); a decode batch of n sequences as n sequences attending over
// their mean context plus the new token.
type tableAttention struct {
	counted
	t       *KernelTables
	o       spec.Op
	kv      string
	context bool
}

func (p *tableAttention) PredictMs(x []float64) float64 { return p.note(p.lookup(x)) }

func (p *tableAttention) lookup(x []float64) (float64, kerneldb.Fit) {
	o := &p.o
	if p.context {
		ctx, chunk := x[0], x[1]
		if chunk <= 0 {
			return 0, kerneldb.Exact
		}
		return p.t.K.ContextAttention(p.kv, o.QHeads, o.KVHeads, o.HeadDim, 1, math.Sqrt(chunk*(chunk+2*ctx)))
	}
	if x[0] <= 0 {
		return 0, kerneldb.Exact
	}
	return p.t.K.GenerationAttention(p.kv, o.QHeads, o.KVHeads, o.HeadDim, x[0], x[1]+1)
}

func (p *tableAttention) table() string {
	t := kerneldb.TableGenAttention
	if p.context {
		t = kerneldb.TableContextAttention
	}
	return fmt.Sprintf("%s [%s], %d/%d heads of %d, KV %s", t, p.t.K.Sources[t], p.o.QHeads, p.o.KVHeads, p.o.HeadDim, p.kv)
}

// tableMoE prices the fused-MoE layer from the moe table at balanced
// routing: x[0] is the tokens routed to this GPU's experts (a step's
// tokens x top-k over EP at even routing; routing draws give each rank
// its own), looked up as the step of x[0] x EP / top-k tokens; a draw
// touching fewer experts than balanced routing is looked up at fewer
// tokens (PredictMs).
type tableMoE struct {
	counted
	t             *KernelTables
	o             spec.Op
	dtype         string
	hidden, inter int
}

func (p *tableMoE) PredictMs(x []float64) float64 { return p.note(p.lookup(x)) }

func (p *tableMoE) lookup(x []float64) (float64, kerneldb.Fit) {
	o := &p.o
	if x[0] <= 0 {
		return 0, kerneldb.Exact
	}
	ep, tp := p.split()
	tokens := x[0] * float64(ep) / float64(max(o.TopK, 1))
	// A routing draw that touches fewer experts than balanced routing
	// would (x[2], spec.ActiveExpertsFeature) is looked up at the token
	// count whose balanced routing touches as many: while experts are
	// left idle the layer's time follows the expert weights it reads.
	balanced := min(x[0], float64(o.LocalExperts))
	if len(x) > spec.ActiveExpertsFeature && x[spec.ActiveExpertsFeature] > 0 && x[spec.ActiveExpertsFeature] < balanced {
		tokens *= x[spec.ActiveExpertsFeature] / balanced
	}
	return p.t.K.MoE(p.dtype, "balanced", p.hidden, p.inter, o.TopK, o.Experts, tp, ep, tokens)
}

// split is the op's MoE EP and TP.
func (p *tableMoE) split() (ep, tp int) {
	return max(p.o.Experts/max(p.o.LocalExperts, 1), 1), max(p.inter/max(p.o.ExpertWidth, 1), 1)
}

func (p *tableMoE) table() string {
	ep, tp := p.split()
	return fmt.Sprintf("%s %s [%s], balanced, hidden %d, width %d, top-%d of %d, TP%d EP%d", kerneldb.TableMoE, p.dtype,
		p.t.K.Sources[kerneldb.TableMoE+"/"+p.dtype], p.hidden, p.inter, p.o.TopK, p.o.Experts, tp, ep)
}

type tableAllReduce struct {
	counted
	t       *KernelTables
	workers int
}

func (p *tableAllReduce) PredictMs(x []float64) float64 { return p.note(p.lookup(x)) }

func (p *tableAllReduce) lookup(x []float64) (float64, kerneldb.Fit) {
	if x[0] <= 0 {
		return 0, kerneldb.Exact
	}
	return p.t.K.AllReduce(p.workers, x[0])
}

func (p *tableAllReduce) table() string {
	return fmt.Sprintf("%s [%s], %d GPUs", kerneldb.TableAllReduce, p.t.K.Sources[kerneldb.TableAllReduce], p.workers)
}

// tableMLA prices MLA attention (DeepSeek style) from the MLA kernel
// tables, as tableAttention prices attention: a prefill chunk after
// cached context as one prompt of the same query-key pairs, a decode
// batch at its mean context plus the new token.
type tableMLA struct {
	counted
	t       *KernelTables
	heads   int
	kv      string
	context bool
}

func (p *tableMLA) PredictMs(x []float64) float64 { return p.note(p.lookup(x)) }

func (p *tableMLA) lookup(x []float64) (float64, kerneldb.Fit) {
	if p.context {
		ctx, chunk := x[0], x[1]
		if chunk <= 0 {
			return 0, kerneldb.Exact
		}
		return p.t.K.MLAContext(p.kv, p.heads, 1, math.Sqrt(chunk*(chunk+2*ctx)))
	}
	if x[0] <= 0 {
		return 0, kerneldb.Exact
	}
	return p.t.K.MLAGeneration(p.kv, p.heads, x[0], x[1]+1)
}

func (p *tableMLA) table() string {
	t := kerneldb.TableGenMLA
	if p.context {
		t = kerneldb.TableContextMLA
	}
	return fmt.Sprintf("%s [%s], %d heads, KV %s", t, p.t.K.Sources[t], p.heads, p.kv)
}

// qkNormBeside adds to a kernel-table GEMM the Q/K norm kernels vLLM runs
// after Qwen3's QKV projection (the projection op's other kernels, which
// gemm_perf does not time), priced by the device model: the op's time on
// the device model less its GEMM's.
type qkNormBeside struct {
	OpPredictor
	roof        roofline.Roofline
	op, gemm    spec.Op
	measurement string
}

// withQKNorm wraps p when o is a QKV projection with Q/K norms priced
// from the GEMM table; other predictors are returned as they are.
func withQKNorm(p OpPredictor, o *spec.Op, roof roofline.Roofline, measurement string) OpPredictor {
	if _, ok := p.(*tableGEMM); !ok || o.Name != spec.OpAttnPreProj || o.QHeads == 0 {
		return p
	}
	gemm := *o
	gemm.Kernels, gemm.QHeads, gemm.KVHeads, gemm.HeadDim = 1, 0, 0, 0
	return qkNormBeside{OpPredictor: p, roof: roof, op: *o, gemm: gemm, measurement: measurement}
}

func (q qkNormBeside) PredictMs(x []float64) float64 {
	norms := q.roof.TimeMs(&q.op, x, q.measurement) - q.roof.TimeMs(&q.gemm, x, q.measurement)
	return q.OpPredictor.PredictMs(x) + max(norms, 0)
}
