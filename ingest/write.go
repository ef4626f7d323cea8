package ingest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ftk-dev/ftk/dataset"
)

// MaxBatchRows is the most samples in one record batch of a dataset file
// (dataset.MaxBatchRows).
const MaxBatchRows = dataset.MaxBatchRows

// write puts the dataset in dir with dataset.Write, each file's record
// built from the records when its turn comes.
func (b *build) write(dir string) error {
	files := make([]dataset.FileToWrite, 0, len(b.files))
	for _, f := range b.files {
		files = append(files, dataset.FileToWrite{
			OutputFile: dataset.OutputFile{Name: f.name, Family: string(f.family), Measurement: f.measurement, Rows: len(f.recs)},
			Record: func() arrow.RecordBatch {
				return buildRecord(f, fileSchema(f, b.m.Device, b.tab), b)
			},
		})
	}
	if err := dataset.Write(dir, &b.m, files); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	return nil
}
