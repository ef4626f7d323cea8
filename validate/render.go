package validate

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Column headers of the two tables, shared by every output format.
var (
	rowHeader     = []string{"config", "workload", "metric", "paired runs", "measured (median)", "simulated (median)", "APE", "signed error"}
	overallHeader = []string{"metric", "rows", "paired runs", "MAPE", "median APE", "max APE", "mean signed error"}
)

func (rep *Report) rowCells(r Row) []string {
	return []string{r.Config, r.Workload, r.Metric, strconv.Itoa(r.Pairs),
		formatValue(r.MeasuredMedian), formatValue(r.SimulatedMedian), pct(r.APEPct), signedPct(r.SignedPct)}
}

func overallCells(o Overall) []string {
	return []string{o.Metric, strconv.Itoa(o.Rows), strconv.Itoa(o.Pairs), pct(o.MAPEPct), pct(o.MedianAPEPct), pct(o.MaxAPEPct), signedPct(o.MeanSignedPct)}
}

// WriteText writes the two tables and the unpaired runs as aligned text for
// a terminal.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Per configuration and workload (median over repetitions; error of simulated against measured)")
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(rowHeader, "\t")))
	for _, r := range rep.Rows {
		fmt.Fprintln(tw, strings.Join(rep.rowCells(r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(tw, "\nOverall per metric")
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(overallHeader, "\t")))
	for _, o := range rep.Overall {
		fmt.Fprintln(tw, strings.Join(overallCells(o), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return rep.writeUnpaired(w, "\nUnpaired runs (%d, not in the tables):\n", "  %s %s (%s): %s\n")
}

func (rep *Report) writeUnpaired(w io.Writer, head, line string) error {
	if len(rep.Unpaired) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, head, len(rep.Unpaired)); err != nil {
		return err
	}
	for _, u := range rep.Unpaired {
		if _, err := fmt.Fprintf(w, line, u.Run.Side, u.Run.ID, u.Run.Source, u.Reason); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the two tables and the unpaired runs as Markdown.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("## Per configuration and workload\n\nMedian over repetitions; error of simulated against measured.\n\n")
	mdRow(&b, rowHeader)
	mdRule(&b, len(rowHeader), 3)
	for _, r := range rep.Rows {
		mdRow(&b, rep.rowCells(r))
	}
	b.WriteString("\n## Overall per metric\n\n")
	mdRow(&b, overallHeader)
	mdRule(&b, len(overallHeader), 1)
	for _, o := range rep.Overall {
		mdRow(&b, overallCells(o))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return rep.writeUnpaired(w, "\n## Unpaired runs (%d, not in the tables)\n\n", "- %s `%s` (`%s`): %s\n")
}

func mdRow(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// mdRule writes the header rule; columns from numeric on are right-aligned.
func mdRule(b *strings.Builder, n, numeric int) {
	b.WriteString("|")
	for i := range n {
		if i >= numeric {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
}

// WriteCSV writes the per-configuration table as CSV with full precision.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"config", "workload", "metric", "paired_runs", "measured_median", "simulated_median", "ape_pct", "signed_error_pct"})
	for _, r := range rep.Rows {
		cw.Write([]string{r.Config, r.Workload, r.Metric, strconv.Itoa(r.Pairs), num(r.MeasuredMedian), num(r.SimulatedMedian), num(r.APEPct), num(r.SignedPct)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteOverallCSV writes the per-metric table as CSV with full precision.
func (rep *Report) WriteOverallCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"metric", "rows", "paired_runs", "mape_pct", "median_ape_pct", "max_ape_pct", "mean_signed_error_pct"})
	for _, o := range rep.Overall {
		cw.Write([]string{o.Metric, strconv.Itoa(o.Rows), strconv.Itoa(o.Pairs), num(o.MAPEPct), num(o.MedianAPEPct), num(o.MaxAPEPct), num(o.MeanSignedPct)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteUnpairedCSV writes the unpaired runs as CSV (header only when none).
func (rep *Report) WriteUnpairedCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"side", "config", "workload", "repetition", "source", "reason"})
	for _, u := range rep.Unpaired {
		id := u.Run.ID
		cw.Write([]string{u.Run.Side.String(), id.Config, id.Workload, strconv.Itoa(id.Repetition), u.Run.Source, u.Reason})
	}
	cw.Flush()
	return cw.Error()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// formatValue prints a metric with about four significant digits.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func pct(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }

func signedPct(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s + "%"
}
