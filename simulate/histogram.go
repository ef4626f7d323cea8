package simulate

import (
	"math"
)

// Histogram counts non-negative values in logarithmic buckets: 256 per
// power of two, so a bucket spans at most 1/256 (0.39%) of its value. It
// keeps the exact count, sum, minimum and maximum, and answers percentiles
// to within HistogramErrorPct in fixed memory (about 140 KiB) however many
// values it sees: the simulator's ITL distribution, where a run has one
// value per output token, and the other latencies of long runs.
type Histogram struct {
	counts   []uint64
	zeros    uint64
	n        uint64
	sum      float64
	sumSq    float64 // for the standard deviation
	min, max float64
}

// HistogramErrorPct bounds a Histogram percentile's error, relative to the
// exact percentile (spec's rule over the same values), for values from
// 2^-30 to 2^41: a value stands for its bucket [lo, lo+w) with w <= lo/256
// and is read as lo x (1 + 1/512), at most lo/512 from any value in the
// bucket, so each rank is within 1/512 (0.195%) relative, and so is the
// interpolation between two ranks; clamping to the observed minimum and
// maximum only moves an estimate towards the truth.
const HistogramErrorPct = 100.0 / 512

const (
	histSubBits = 8 // sub-buckets per octave = 1 << histSubBits
	histMinExp  = 1023 - 30
	histMaxExp  = 1023 + 40 // values from 2^-30 to 2^41
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, (histMaxExp-histMinExp+1)<<histSubBits), min: math.Inf(1), max: math.Inf(-1)}
}

func histBucket(v float64) int {
	bits := math.Float64bits(v)
	exp := int(bits>>52) & 0x7ff
	switch {
	case exp < histMinExp:
		return 0
	case exp > histMaxExp:
		return (histMaxExp-histMinExp+1)<<histSubBits - 1
	}
	sub := int(bits>>(52-histSubBits)) & (1<<histSubBits - 1)
	return (exp-histMinExp)<<histSubBits | sub
}

// histValue is the middle of bucket i.
func histValue(i int) float64 {
	exp := i>>histSubBits + histMinExp
	sub := i & (1<<histSubBits - 1)
	lo := math.Float64frombits(uint64(exp)<<52 | uint64(sub)<<(52-histSubBits))
	return lo * (1 + 0.5/float64(1<<histSubBits))
}

// Add counts v; negative values count as zero.
func (h *Histogram) Add(v float64) {
	if v <= 0 {
		v = 0
		h.zeros++
	} else {
		h.counts[histBucket(v)]++
	}
	h.n++
	h.sum += v
	h.sumSq += v * v
	h.min = min(h.min, v) // the builtins: math.Min's rules, inlined
	h.max = max(h.max, v)
}

// Count is the number of values added.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the exact mean, NaN when empty.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.n)
}

// Std is the population standard deviation (numpy's np.std, as vllm bench
// serve reports it) from the exact sums, NaN when empty.
func (h *Histogram) Std() float64 {
	if h.n == 0 {
		return math.NaN()
	}
	m := h.sum / float64(h.n)
	return math.Sqrt(math.Max(0, h.sumSq/float64(h.n)-m*m))
}

// Max is the largest value added, -Inf when empty.
func (h *Histogram) Max() float64 { return h.max }

// Percentile returns the p-th percentile with the rule of spec.Percentile
// (linear interpolation between closest ranks), each rank's value taken as
// the middle of its bucket and clamped to the observed range. NaN when
// empty.
func (h *Histogram) Percentile(p float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := p / 100 * float64(h.n-1)
	lo := uint64(math.Floor(rank))
	hi := min(lo+1, h.n-1)
	vlo, vhi := h.rankValue(lo), h.rankValue(hi)
	return vlo + (rank-float64(lo))*(vhi-vlo)
}

// rankValue is the value of the k-th smallest (0-based) value's bucket.
func (h *Histogram) rankValue(k uint64) float64 {
	if k < h.zeros {
		return 0
	}
	seen := h.zeros
	for i, c := range h.counts {
		seen += c
		if k < seen {
			return math.Min(math.Max(histValue(i), h.min), h.max)
		}
	}
	return h.max
}
