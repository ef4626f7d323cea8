package kerneldb

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Table is one parquet file read into rows of its family (one of the
// slices is set).
type Table struct {
	Path      string
	Name      string // file name without .parquet
	Rows      int
	GEMM      []GEMMRow
	Attention []AttentionRow
	MoE       []MoERow
	AllReduce []AllReduceRow
	MLA       []MLARow
}

// KernelSources counts the table's rows by kernel source.
func (t *Table) KernelSources() map[string]int {
	out := map[string]int{}
	t.each(func(r *Row) { out[r.KernelSource]++ })
	return out
}

// Devices counts the table's rows by device.
func (t *Table) Devices() map[string]int {
	out := map[string]int{}
	t.each(func(r *Row) { out[r.Device]++ })
	return out
}

func (t *Table) each(f func(*Row)) {
	for i := range t.GEMM {
		f(&t.GEMM[i].Row)
	}
	for i := range t.Attention {
		f(&t.Attention[i].Row)
	}
	for i := range t.MoE {
		f(&t.MoE[i].Row)
	}
	for i := range t.AllReduce {
		f(&t.AllReduce[i].Row)
	}
	for i := range t.MLA {
		f(&t.MLA[i].Row)
	}
}

// columns gives typed access to one parquet file's columns; every error
// names the file, the row (0-based) and the column.
type columns struct {
	path string
	tbl  arrow.Table
	n    int
}

func (c *columns) errf(row int, col, format string, args ...any) error {
	return fmt.Errorf("%s: row %d, column %s: %s", c.path, row, col, fmt.Sprintf(format, args...))
}

func (c *columns) find(name string) arrow.Array {
	idx := c.tbl.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil
	}
	ch := c.tbl.Column(idx[0]).Data().Chunks()
	if len(ch) == 1 {
		return ch[0]
	}
	a, err := array.Concatenate(ch, memory.DefaultAllocator)
	if err != nil {
		return nil
	}
	return a
}

func (c *columns) has(name string) bool { return len(c.tbl.Schema().FieldIndices(name)) > 0 }

func (c *columns) missing(name string) error {
	var have []string
	for _, f := range c.tbl.Schema().Fields() {
		have = append(have, f.Name)
	}
	return fmt.Errorf("%s: column %s is missing (columns: %s)", c.path, name, strings.Join(have, ", "))
}

// ints reads an integer column; positive says every value must be > 0;
// optional fills a missing column with zeros.
func (c *columns) ints(name string, positive, optional bool) ([]int, error) {
	a := c.find(name)
	if a == nil {
		if optional {
			return make([]int, c.n), nil
		}
		return nil, c.missing(name)
	}
	out := make([]int, c.n)
	for i := 0; i < c.n; i++ {
		if a.IsNull(i) {
			if optional {
				continue
			}
			return nil, c.errf(i, name, "empty cell")
		}
		var v int64
		switch x := a.(type) {
		case *array.Int64:
			v = x.Value(i)
		case *array.Int32:
			v = int64(x.Value(i))
		case *array.Int16:
			v = int64(x.Value(i))
		case *array.Int8:
			v = int64(x.Value(i))
		case *array.Uint32:
			v = int64(x.Value(i))
		case *array.Uint64:
			v = int64(x.Value(i))
		case *array.Float64:
			f := x.Value(i)
			if f != math.Trunc(f) || math.IsInf(f, 0) {
				return nil, c.errf(i, name, "%v is not an integer", f)
			}
			v = int64(f)
		default:
			return nil, c.errf(i, name, "type %s, want an integer", a.DataType())
		}
		if v < 0 || positive && v == 0 {
			return nil, c.errf(i, name, "%d, want a positive integer", v)
		}
		out[i] = int(v)
	}
	return out, nil
}

// strs reads a text column (every cell set).
func (c *columns) strs(name string, optional bool) ([]string, error) {
	a := c.find(name)
	if a == nil {
		if optional {
			return make([]string, c.n), nil
		}
		return nil, c.missing(name)
	}
	out := make([]string, c.n)
	for i := 0; i < c.n; i++ {
		if a.IsNull(i) {
			if optional {
				continue
			}
			return nil, c.errf(i, name, "empty cell")
		}
		switch x := a.(type) {
		case *array.String:
			out[i] = x.Value(i)
		case *array.LargeString:
			out[i] = x.Value(i)
		case *array.Dictionary:
			out[i] = x.ValueStr(i)
		default:
			return nil, c.errf(i, name, "type %s, want text", a.DataType())
		}
		if out[i] == "" && !optional {
			return nil, c.errf(i, name, "empty text")
		}
	}
	return out, nil
}

// latencies reads the latency column: milliseconds, finite and > 0.
func (c *columns) latencies() ([]float64, error) {
	const name = "latency"
	a := c.find(name)
	if a == nil {
		return nil, c.missing(name)
	}
	out := make([]float64, c.n)
	for i := 0; i < c.n; i++ {
		if a.IsNull(i) {
			return nil, c.errf(i, name, "empty cell")
		}
		var v float64
		switch x := a.(type) {
		case *array.Float64:
			v = x.Value(i)
		case *array.Float32:
			v = float64(x.Value(i))
		default:
			return nil, c.errf(i, name, "type %s, want a float", a.DataType())
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, c.errf(i, name, "%v ms, want a finite time > 0", v)
		}
		out[i] = v
	}
	return out, nil
}

// rows reads the columns every table has.
func (c *columns) rows() ([]Row, error) {
	dev, err := c.strs("device", false)
	if err != nil {
		return nil, err
	}
	ver, err := c.strs("version", false)
	if err != nil {
		return nil, err
	}
	ks, err := c.strs("kernel_source", false)
	if err != nil {
		return nil, err
	}
	lat, err := c.latencies()
	if err != nil {
		return nil, err
	}
	out := make([]Row, c.n)
	for i := range out {
		out[i] = Row{Device: dev[i], Version: ver[i], KernelSource: ks[i], LatencyMs: lat[i]}
	}
	return out, nil
}

// ReadTable reads one parquet table of a family ftk prices (Priced).
func ReadTable(path string) (*Table, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".parquet")
	if _, ok := priced[name]; !ok {
		return nil, fmt.Errorf("%s: table %s is not one ftk reads", path, name)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable parquet file: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	at, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer at.Release()
	c := &columns{path: path, tbl: at, n: int(at.NumRows())}
	t := &Table{Path: path, Name: name, Rows: c.n}
	base, err := c.rows()
	if err != nil {
		return nil, err
	}
	switch name {
	case TableGEMM:
		err = readGEMM(c, base, t)
	case TableContextAttention, TableGenAttention:
		err = readAttention(c, base, t, name == TableContextAttention)
	case TableMoE:
		err = readMoE(c, base, t)
	case TableAllReduce:
		err = readAllReduce(c, base, t)
	default:
		err = readMLA(c, base, t, name)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// intCols reads several integer columns at once.
func (c *columns) intCols(positive bool, names ...string) ([][]int, error) {
	out := make([][]int, len(names))
	for i, n := range names {
		v, err := c.ints(n, positive, false)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func readGEMM(c *columns, base []Row, t *Table) error {
	dt, err := c.strs("gemm_dtype", false)
	if err != nil {
		return err
	}
	v, err := c.intCols(true, "m", "n", "k")
	if err != nil {
		return err
	}
	t.GEMM = make([]GEMMRow, c.n)
	for i := range t.GEMM {
		t.GEMM[i] = GEMMRow{Row: base[i], Dtype: dt[i], M: v[0][i], N: v[1][i], K: v[2][i]}
	}
	return nil
}

func readAttention(c *columns, base []Row, t *Table, context bool) error {
	ad, err := c.strs("attn_dtype", false)
	if err != nil {
		return err
	}
	kd, err := c.strs("kv_cache_dtype", false)
	if err != nil {
		return err
	}
	v, err := c.intCols(true, "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim")
	if err != nil {
		return err
	}
	step, err := c.ints("step", false, false)
	if err != nil {
		return err
	}
	win, err := c.ints("window_size", false, true)
	if err != nil {
		return err
	}
	t.Attention = make([]AttentionRow, c.n)
	for i := range t.Attention {
		t.Attention[i] = AttentionRow{Row: base[i], Context: context, Batch: v[0][i], ISL: v[1][i], Step: step[i],
			Heads: v[2][i], KVHeads: v[3][i], HeadDim: v[4][i], AttnDtype: ad[i], KVCacheDtype: kd[i], WindowSize: win[i]}
	}
	return nil
}

func readMoE(c *columns, base []Row, t *Table) error {
	dt, err := c.strs("moe_dtype", false)
	if err != nil {
		return err
	}
	dist, err := c.strs("distribution", false)
	if err != nil {
		return err
	}
	v, err := c.intCols(true, "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size")
	if err != nil {
		return err
	}
	t.MoE = make([]MoERow, c.n)
	for i := range t.MoE {
		t.MoE[i] = MoERow{Row: base[i], Dtype: dt[i], NumTokens: v[0][i], Hidden: v[1][i], InterSize: v[2][i],
			TopK: v[3][i], Experts: v[4][i], MoETP: v[5][i], MoEEP: v[6][i], Distribution: dist[i]}
	}
	return nil
}

func readAllReduce(c *columns, base []Row, t *Table) error {
	dt, err := c.strs("allreduce_dtype", false)
	if err != nil {
		return err
	}
	be, err := c.strs("backend", true)
	if err != nil {
		return err
	}
	v, err := c.intCols(true, "num_gpus", "message_size")
	if err != nil {
		return err
	}
	t.AllReduce = make([]AllReduceRow, c.n)
	for i := range t.AllReduce {
		ks := strings.ToLower(base[i].KernelSource)
		graph := strings.Contains(ks, "graph") || strings.Contains(strings.ToLower(be[i]), "graph")
		t.AllReduce[i] = AllReduceRow{Row: base[i], Dtype: dt[i], GPUs: v[0][i], MessageSize: v[1][i], Graph: graph, Backend: be[i]}
	}
	return nil
}

func readMLA(c *columns, base []Row, t *Table, name string) error {
	dt, err := c.strs("mla_dtype", false)
	if err != nil {
		return err
	}
	kd, err := c.strs("kv_cache_dtype", false)
	if err != nil {
		return err
	}
	module := name == TableContextMLAModule || name == TableGenMLAModule
	gt, err := c.strs("gemm_type", !module)
	if err != nil {
		return err
	}
	model, err := c.strs("model", !module)
	if err != nil {
		return err
	}
	v, err := c.intCols(true, "num_heads", "batch_size", "isl", "tp_size")
	if err != nil {
		return err
	}
	step, err := c.ints("step", false, false)
	if err != nil {
		return err
	}
	context := name == TableContextMLA || name == TableContextMLAModule
	t.MLA = make([]MLARow, c.n)
	for i := range t.MLA {
		t.MLA[i] = MLARow{Row: base[i], Context: context, Module: module, Dtype: dt[i], KVCacheDtype: kd[i], GEMMType: gt[i],
			Model: model[i], Heads: v[0][i], Batch: v[1][i], ISL: v[2][i], TP: v[3][i], Step: step[i]}
	}
	return nil
}
