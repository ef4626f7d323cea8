package kerneldb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TableQuantStatic is the quantize family's table of vLLM's static FP8
// activation quantization (static_scaled_fp8_quant over M tokens x K).
const TableQuantStatic = "scale_matrix_perf"

// QuantRow is one row of a quantize table: an activation quantization of
// M tokens x K BF16 elements to QuantDtype.
type QuantRow struct {
	Row
	M, K       int
	QuantDtype string
}

// ReadQuantTable reads a quantize table (TableQuantStatic). The quantize
// family is not one ftk prices from (ingest and the kernel-table lookups
// leave it out, Priced); the device model's refit tests read it.
func ReadQuantTable(path string) ([]QuantRow, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".parquet")
	if name != TableQuantStatic {
		return nil, fmt.Errorf("%s: table %s is not a quantize table ftk reads (%s)", path, name, TableQuantStatic)
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
	base, err := c.rows()
	if err != nil {
		return nil, err
	}
	v, err := c.intCols(true, "m", "k")
	if err != nil {
		return nil, err
	}
	dt, err := c.strs("quant_dtype", false)
	if err != nil {
		return nil, err
	}
	out := make([]QuantRow, c.n)
	for i := range out {
		out[i] = QuantRow{Row: base[i], M: v[0][i], K: v[1][i], QuantDtype: dt[i]}
	}
	return out, nil
}
