package ingest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/ftk-dev/ftk/dataset"
)

// TestLargeDatasetBatches: a file with more samples than MaxBatchRows is
// written as several bounded record batches, and reads back whole and in
// order (one unbounded batch made large datasets unreadable: Arrow readers
// refuse a batch body over 256 MiB).
func TestLargeDatasetBatches(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(profilesDir(t), "vidur-h100", "Llama-2-7b-hf", "mlp.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(src), "\n", 3)
	header, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
	tok := -1
	for i, h := range header {
		if h == "num_tokens" {
			tok = i
		}
	}
	if tok < 0 {
		t.Fatal("no num_tokens column")
	}
	// Distinct rows (not exact duplicates, which ingest drops): num_tokens
	// 1..rows.
	ops := strings.Count(lines[0], ".median")
	rows := MaxBatchRows/ops*2 + 1000
	var b bytes.Buffer
	b.WriteString(lines[0] + "\n")
	for i := 1; i <= rows; i++ {
		row[tok] = fmt.Sprint(i)
		b.WriteString(strings.Join(row, ",") + "\n")
	}
	dir := filepath.Join(t.TempDir(), "h100", "llama-2-7b")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "mlp.csv"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	m, err := Ingest([]string{dir}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Samples <= 2*MaxBatchRows {
		t.Fatalf("%d samples: the test needs more than %d", m.Samples, 2*MaxBatchRows)
	}
	data, err := os.ReadFile(filepath.Join(out, m.Files[0].Name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if want := (m.Samples + MaxBatchRows - 1) / MaxBatchRows; r.NumRecords() != want {
		t.Errorf("%d record batches for %d samples, want %d", r.NumRecords(), m.Samples, want)
	}
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() > MaxBatchRows {
			t.Errorf("batch %d: %d rows", i, rec.NumRows())
		}
	}
	d, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Samples) != m.Samples {
		t.Fatalf("loaded %d samples of %d", len(d.Samples), m.Samples)
	}
	seen := map[float64]int{}
	for _, s := range d.Samples {
		seen[s.Features[0]]++
	}
	if len(seen) != rows {
		t.Errorf("%d distinct num_tokens read back, want %d", len(seen), rows)
	}
}
