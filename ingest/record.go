package ingest

import (
	"math"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// record is one sample as ingest holds it before writing: strings are ids
// in the run's strTable and the input is an index, so that a record has no
// pointers (the garbage collector skips tens of thousands of them) and
// sorts and compares as integers.
type record struct {
	f                           [3]float64 // features, in spec.OpFeatures order
	median, mean, min, max, std float64
	op, meas, gctx, rpath       int32 // key strings
	tp, ep, local, workers      int32 // key numbers
	model, cond                 int32 // cond: conditions that tell duplicates apart
	kernel                      int32 // kernel source (spec.KernelSourceOf the row's kernel_source cell)
	in, line, count             int32 // input index, 1-based line
	ext                         int32 // offset of the row's extras in the input's slab
	nf, variant, phase          uint8
	conflict                    bool
	cross                       bool // a collective across nodes
}

// Variants and phases as stored in records.
var (
	variantNames = [...]string{dataset.VariantPure, dataset.VariantMixed, dataset.VariantTrueMixed}
	phaseNames   = [...]string{"", phasePrefill, phaseDecode, phaseMixed}
)

const (
	varPure uint8 = iota
	varMixed
	varTrueMixed
)

const (
	phNone uint8 = iota
	phPrefill
	phDecode
	phMixed
)

// recKey is the key of a record being emitted.
type recKey struct {
	op, gctx, rpath        int32
	tp, ep, local, workers int32
	cross                  bool
}

// xval is one extra cell in 8 bytes, 0 for a blank or absent cell. A
// number (a boolean as 0 or 1) is held as its float64 bits inverted, so
// that 0.0 is not 0 (the all-ones bits that take 0 are a NaN, which a
// column stores as null anyway); a string as its id in the run's strTable
// plus 1.
type xval uint64

func numX(f float64) xval { return xval(^math.Float64bits(f)) }

func strX(id int32) xval { return xval(id) + 1 }

func (v xval) ok() bool { return v != 0 }

func (v xval) num() float64 { return math.Float64frombits(^uint64(v)) }

func (v xval) id() int32 { return int32(v - 1) }

// strTable interns the strings of one run: every distinct value is
// allocated once and named by an id. Id 0 is "".
type strTable struct {
	ids  map[string]int32
	strs []string
}

func newStrTable() *strTable {
	return &strTable{ids: map[string]int32{"": 0}, strs: []string{""}}
}

// id returns the id of b, adding it if new.
func (t *strTable) id(b []byte) int32 {
	if i, ok := t.ids[string(b)]; ok {
		return i
	}
	return t.add(string(b))
}

// idOf returns the id of s, adding it if new.
func (t *strTable) idOf(s string) int32 {
	if i, ok := t.ids[s]; ok {
		return i
	}
	return t.add(s)
}

func (t *strTable) add(s string) int32 {
	i := int32(len(t.strs))
	t.ids[s] = i
	t.strs = append(t.strs, s)
	return i
}

// ranks returns each id's rank in the lexical order of the strings.
func (t *strTable) ranks() []int32 {
	order := make([]int32, len(t.strs))
	for i := range order {
		order[i] = int32(i)
	}
	sortByString(order, t.strs)
	rank := make([]int32, len(t.strs))
	for r, id := range order {
		rank[id] = int32(r)
	}
	return rank
}

// stat is one operator's statistics in a row.
type stat struct {
	median, mean, min, max, std float64
	count                       int
}

// emit adds a sample of the current row.
func (r *reader) emit(k recKey, feats []float64, st stat, variant, phase uint8, cond int32) {
	for _, f := range feats {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			r.drop(-1, r.tab.strs[k.op], reasonBadFeature)
			return
		}
	}
	model := r.modelID
	if r.fam == spec.FamilyCollective {
		model = 0
	}
	if len(r.recs) == 0 || len(r.recs[len(r.recs)-1]) == cap(r.recs[len(r.recs)-1]) {
		r.recs = append(r.recs, make([]record, 0, 1024))
	}
	last := &r.recs[len(r.recs)-1]
	rec := record{
		median: st.median, mean: st.mean, min: st.min, max: st.max, std: st.std,
		op: k.op, gctx: k.gctx, rpath: k.rpath, tp: k.tp, ep: k.ep, local: k.local, workers: k.workers,
		model: model, cond: cond, in: r.index, line: int32(r.line), count: int32(st.count), ext: r.rowExt,
		variant: variant, phase: phase, cross: k.cross, kernel: r.kernelOf(k.op),
	}
	rec.nf = uint8(copy(rec.f[:], feats))
	*last = append(*last, rec)
	r.nrecs++
	r.kept++
}

// key returns the record's predictor key.
func (b *build) key(r *record) spec.OpKey {
	s := b.tab.strs
	return spec.OpKey{Op: s[r.op], Measurement: s[r.meas], TP: int(r.tp), EP: int(r.ep), LocalExperts: int(r.local),
		GatingContext: s[r.gctx], RoutingPath: s[r.rpath], Workers: int(r.workers), CrossNode: r.cross}
}
