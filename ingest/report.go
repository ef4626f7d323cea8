package ingest

import (
	"fmt"
	"io"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
)

// reportDropped is the most excluded rows the report prints per input; the
// manifest has them all.
const reportDropped = 10

// WriteReport prints what an ingest run read and wrote: one line per input
// (family, measurement type, device and model with where they came from,
// rows in and out), its notes, its excluded rows as path:line:column
// lines, and a closing line for the dataset.
func WriteReport(w io.Writer, dir string, m *dataset.Manifest) {
	for _, in := range m.Inputs {
		model := in.Model
		if model == "" {
			model = "-"
		}
		meas := in.Measurement
		if in.MeasurementDefaulted {
			meas += " (defaulted)"
		}
		fmt.Fprintf(w, "%s: %s/%s %s, device %s (%s), model %s: %d rows in, %d with samples, %d samples\n",
			in.Path, in.Family, in.Dialect, meas, in.Device, in.DeviceFrom, model, in.RowsIn, in.RowsOut, in.Samples)
		if in.MeasurementNote != "" {
			fmt.Fprintf(w, "  note: %s\n", in.MeasurementNote)
		}
		for _, r := range in.Renamed {
			fmt.Fprintf(w, "  note: legacy operator %s read as %s (%s)\n", r.From, r.To, r.Note)
		}
		for _, n := range in.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		for i, g := range in.Excluded {
			if i == reportDropped {
				fmt.Fprintf(w, "  ... and %d more groups of excluded rows (see %s/%s)\n", len(in.Excluded)-i, dir, dataset.ManifestFile)
				break
			}
			d := firstOf(g)
			e := RowError{Path: in.Path, Line: d.line, Column: d.column, Msg: d.describe()}
			more := ""
			if n := len(g.Lines); n > 1 {
				more = fmt.Sprintf(" (and %d more rows: lines %s)", n-1, lineList(g.Lines[1:], 5))
			}
			fmt.Fprintf(w, "  excluded %s%s\n", e.Error(), more)
		}
	}
	for i, c := range m.Conflicts {
		if i == reportDropped {
			fmt.Fprintf(w, "... and %d more conflicting duplicated shapes (see %s/%s)\n", len(m.Conflicts)-i, dir, dataset.ManifestFile)
			break
		}
		at := c.At[0]
		fmt.Fprintf(w, "conflicting duplicate %s %s %v: %d samples, medians %.4g..%.4g ms (%s:%s)\n",
			c.Key, c.Variant, c.Features, c.Samples, c.MedianMinMs, c.MedianMaxMs, at.Source, lineList(at.Lines, 4))
	}
	for _, f := range m.IdenticalFiles {
		fmt.Fprintf(w, "%s: skipped, the same bytes as %s (sha256 %.12s...)\n", f.Path, f.SameAs, f.SHA256)
	}
	fmt.Fprintf(w, "wrote %s: device %s, %s profiles, %s in %s; %s\n",
		dir, m.Device, strings.Join(m.Backends, "+"), dataset.Plural(m.Samples, "sample"), dataset.Plural(len(m.Files), "Arrow file"), m.Counts())
	fmt.Fprintf(w, "(a sample is one timed operator of a row; checksum sha256:%s)\n", m.Checksum())
}

// lineList prints up to n line numbers.
func lineList(lines []int, n int) string {
	var b strings.Builder
	for i, l := range lines {
		if i == n {
			fmt.Fprintf(&b, ", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, l)
	}
	return b.String()
}
