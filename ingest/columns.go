package ingest

import (
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Columns are filled straight into Go slices, one pass over the sorted
// records, and handed to Arrow as buffers: no builders, no per-cell calls.

// validity is a column's null bitmap, made on the first null.
type validity struct {
	n     int
	bits  []byte
	nulls int
}

func (v *validity) null(i int) {
	if v.bits == nil {
		v.bits = make([]byte, (v.n+7)/8)
		for k := range v.bits {
			v.bits[k] = 0xff
		}
		if r := v.n % 8; r != 0 {
			v.bits[len(v.bits)-1] = byte(1<<r - 1) // bits past the end are zero
		}
	}
	v.bits[i/8] &^= 1 << (i % 8)
	v.nulls++
}

func (v *validity) buffer() *memory.Buffer {
	if v.nulls == 0 {
		return nil
	}
	return memory.NewBufferBytes(v.bits)
}

func makeArray(t arrow.DataType, n int, v *validity, values []byte) arrow.Array {
	d := array.NewData(t, n, []*memory.Buffer{v.buffer(), memory.NewBufferBytes(values)}, nil, v.nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

type intCol struct {
	validity
	vals []int32
}

func newIntCol(n int) *intCol { return &intCol{validity{n: n}, make([]int32, n)} }

func (c *intCol) set(i int, v int32, ok bool) {
	if ok {
		c.vals[i] = v
	} else {
		c.null(i)
	}
}

func (c *intCol) array() arrow.Array {
	return makeArray(arrow.PrimitiveTypes.Int32, c.n, &c.validity, arrow.Int32Traits.CastToBytes(c.vals))
}

// floatCol is a float64 column; NaN is null.
type floatCol struct {
	validity
	vals []float64
}

func newFloatCol(n int) *floatCol { return &floatCol{validity{n: n}, make([]float64, n)} }

func (c *floatCol) set(i int, v float64) {
	if v == v {
		c.vals[i] = v
	} else {
		c.null(i)
	}
}

func (c *floatCol) array() arrow.Array {
	return makeArray(arrow.PrimitiveTypes.Float64, c.n, &c.validity, arrow.Float64Traits.CastToBytes(c.vals))
}

type boolCol struct {
	validity
	vals []byte // bitmap
}

func newBoolCol(n int) *boolCol { return &boolCol{validity{n: n}, make([]byte, (n+7)/8)} }

func (c *boolCol) set(i int, v, ok bool) {
	switch {
	case !ok:
		c.null(i)
	case v:
		c.vals[i/8] |= 1 << (i % 8)
	}
}

func (c *boolCol) array() arrow.Array {
	return makeArray(arrow.FixedWidthTypes.Boolean, c.n, &c.validity, c.vals)
}

// dictCol is a dictionary-encoded string column. The dictionary holds the
// values in order of first appearance.
type dictCol struct {
	validity
	idx  []int32
	dict []string
}

func (c *dictCol) array() arrow.Array {
	it, idx := narrowIndex(c.idx, len(c.dict))
	ia := makeArray(it, c.n, &c.validity, idx)
	defer ia.Release()
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	sb.AppendValues(c.dict, nil)
	da := sb.NewArray()
	defer da.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: it, ValueType: arrow.BinaryTypes.String}, ia, da)
}

// narrowIndex returns the narrowest signed index type that numbers a
// dictionary of n values (int8, int16 or int32) and idx as its bytes.
func narrowIndex(idx []int32, n int) (arrow.DataType, []byte) {
	switch {
	case n <= math.MaxInt8+1:
		b := make([]byte, len(idx))
		for i, v := range idx {
			b[i] = byte(v)
		}
		return arrow.PrimitiveTypes.Int8, b
	case n <= math.MaxInt16+1:
		b := make([]int16, len(idx))
		for i, v := range idx {
			b[i] = int16(v)
		}
		return arrow.PrimitiveTypes.Int16, arrow.Int16Traits.CastToBytes(b)
	}
	return arrow.PrimitiveTypes.Int32, arrow.Int32Traits.CastToBytes(idx)
}

// idCol is a dictionary column of strTable ids.
type idCol struct {
	dictCol
	tab   *strTable
	remap []int32 // table id -> dictionary index + 1
}

func newIDCol(n int, tab *strTable) *idCol {
	return &idCol{dictCol: dictCol{validity: validity{n: n}, idx: make([]int32, n)}, tab: tab, remap: make([]int32, len(tab.strs))}
}

func (c *idCol) set(i int, id int32, ok bool) {
	if !ok {
		c.null(i)
		return
	}
	if c.remap[id] == 0 {
		c.dict = append(c.dict, c.tab.strs[id])
		c.remap[id] = int32(len(c.dict))
	}
	c.idx[i] = c.remap[id] - 1
}

// runCol is a dictionary column of few distinct strings that come in runs.
type runCol struct {
	dictCol
	last    string
	lastIdx int32
}

func newRunCol(n int) *runCol {
	return &runCol{dictCol: dictCol{validity: validity{n: n}, idx: make([]int32, n)}, lastIdx: -1}
}

func (c *runCol) set(i int, s string) {
	if c.lastIdx < 0 || s != c.last {
		j := slices.Index(c.dict, s)
		if j < 0 {
			j = len(c.dict)
			c.dict = append(c.dict, s)
		}
		c.last, c.lastIdx = s, int32(j)
	}
	c.idx[i] = c.lastIdx
}
