package validate

import (
	"io"
	"strings"
	"text/tabwriter"
)

// table is an aligned text table with an upper-case header.
type table struct {
	rows [][]string
}

func newTable(header ...string) *table {
	h := make([]string, len(header))
	for i, c := range header {
		h[i] = strings.ToUpper(c)
	}
	return &table{rows: [][]string{h}}
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range t.rows {
		io.WriteString(tw, strings.Join(r, "\t")+"\n")
	}
	tw.Flush()
}
