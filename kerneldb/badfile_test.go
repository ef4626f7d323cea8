package kerneldb

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeBadGEMM writes a two-row gemm_perf table whose second row has a
// negative latency.
func writeBadGEMM(t *testing.T, path string) {
	t.Helper()
	str := []string{"framework", "version", "device", "op_name", "kernel_source", "gemm_dtype"}
	var fields []arrow.Field
	for _, s := range str {
		fields = append(fields, arrow.Field{Name: s, Type: arrow.BinaryTypes.String})
	}
	for _, s := range []string{"m", "n", "k"} {
		fields = append(fields, arrow.Field{Name: s, Type: arrow.PrimitiveTypes.Int64})
	}
	fields = append(fields, arrow.Field{Name: "latency", Type: arrow.PrimitiveTypes.Float64})
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, v := range []string{"VLLM", "0.14.0", "NVIDIA H100 80GB HBM3", "gemm", "vllm_default", "bfloat16"} {
		b.Field(i).(*array.StringBuilder).AppendValues([]string{v, v}, nil)
	}
	for i := 6; i < 9; i++ {
		b.Field(i).(*array.Int64Builder).AppendValues([]int64{128, 256}, nil)
	}
	b.Field(9).(*array.Float64Builder).AppendValues([]float64{0.01, -1}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
