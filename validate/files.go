package validate

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ftk-dev/ftk/atomicfile"
)

// Report files written by WriteFiles, besides the CDF plots.
const (
	MarkdownFile = "errors.md"
	RowsCSVFile  = "errors.csv"
	OverallFile  = "overall.csv"
	UnpairedFile = "unpaired.csv"
)

// WriteFiles writes the report into dir (created if needed): the Markdown
// tables, the two CSV tables, the unpaired runs and one CDF plot per
// configuration and workload. Each file is written atomically. It returns
// the files written.
func (rep *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report directory: %w", err)
	}
	var files []string
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{MarkdownFile, rep.WriteMarkdown},
		{RowsCSVFile, rep.WriteCSV},
		{OverallFile, rep.WriteOverallCSV},
		{UnpairedFile, rep.WriteUnpairedCSV},
	} {
		p := filepath.Join(dir, f.name)
		if err := atomicfile.Write(p, func(w *bufio.Writer) error { return f.write(w) }); err != nil {
			return files, err
		}
		files = append(files, p)
	}
	plots, err := rep.WritePlots(dir)
	return append(files, plots...), err
}
