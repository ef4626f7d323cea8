package runresult

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ftk-dev/ftk/atomicfile"
)

// requestColumns are the per-request columns, in file order (CSV and
// Arrow alike).
var requestColumns = []string{"request_id", "arrival_s", "prompt_tokens", "output_tokens", "first_token_s",
	"finish_s", "ttft_ms", "tpot_ms", "e2e_ms", "mean_itl_ms", "kv_transfer_ms", "preemptions", "cached_prompt_tokens", "status"}

// hostRequestColumns are the columns of a run with a host tier:
// host_cached_prompt_tokens (RequestMetrics.HostCachedPromptTokens) comes
// before status.
var hostRequestColumns = append(append(append([]string{}, requestColumns[:len(requestColumns)-1]...), "host_cached_prompt_tokens"), "status")

// columnsOf is the columns of a run with a host tier or without.
func columnsOf(host bool) []string {
	if host {
		return hostRequestColumns
	}
	return requestColumns
}

// requestSchema and hostRequestSchema are the Arrow schemas of
// requests.arrow without and with a host tier. Times and latencies a
// request lacks are null.
var requestSchema, hostRequestSchema = schemaOf(requestColumns), schemaOf(hostRequestColumns)

func schemaOf(columns []string) *arrow.Schema {
	fields := make([]arrow.Field, len(columns))
	for i, n := range columns {
		var t arrow.DataType = arrow.PrimitiveTypes.Float64
		switch n {
		case "request_id", "prompt_tokens", "output_tokens", "preemptions", "cached_prompt_tokens", "host_cached_prompt_tokens":
			t = arrow.PrimitiveTypes.Int64
		case "status":
			t = arrow.BinaryTypes.String
		}
		fields[i] = arrow.Field{Name: n, Type: t, Nullable: t == arrow.PrimitiveTypes.Float64}
	}
	md := arrow.NewMetadata([]string{"ftk_artifact", "schema_version"}, []string{"simulate_requests", "3"})
	return arrow.NewSchema(fields, &md)
}

// csvRequestWriter writes requests.csv rows; missing values are empty.
type csvRequestWriter struct {
	w    io.Writer
	buf  []byte
	host bool
}

func newCSVRequestWriter(w io.Writer, host bool) (*csvRequestWriter, error) {
	c := &csvRequestWriter{w: w, host: host}
	_, err := io.WriteString(w, strings.Join(columnsOf(host), ",")+"\n")
	return c, err
}

func appendCSVFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) {
		return b
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// WriteRequest implements RequestSink.
func (c *csvRequestWriter) WriteRequest(m *RequestMetrics) error {
	b := strconv.AppendInt(c.buf[:0], int64(m.RequestID), 10)
	b = append(b, ',')
	b = appendCSVFloat(b, m.ArrivalS)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(m.PromptTokens), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(m.OutputTokens), 10)
	for _, v := range [...]float64{m.FirstTokenS, m.FinishS, m.TTFTMs, m.TPOTMs, m.E2EMs, m.MeanITLMs, m.KVTransferMs} {
		b = append(b, ',')
		b = appendCSVFloat(b, v)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(m.Preemptions), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(m.CachedPromptTokens), 10)
	b = append(b, ',')
	if c.host {
		b = strconv.AppendInt(b, int64(m.HostCachedPromptTokens), 10)
		b = append(b, ',')
	}
	b = append(b, m.Status...)
	b = append(b, '\n')
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// arrowBatchRows is the rows per Arrow record batch.
const arrowBatchRows = 1 << 16

// arrowRequestWriter writes requests.arrow (Arrow IPC file format) in
// record batches of arrowBatchRows rows.
type arrowRequestWriter struct {
	fw   *ipc.FileWriter
	b    *array.RecordBuilder
	rows int
	host bool
}

func newArrowRequestWriter(w io.Writer, host bool) (*arrowRequestWriter, error) {
	mem := memory.NewGoAllocator()
	schema := requestSchema
	if host {
		schema = hostRequestSchema
	}
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	return &arrowRequestWriter{fw: fw, b: array.NewRecordBuilder(mem, schema), host: host}, nil
}

func appendNullable(b *array.Float64Builder, v float64) {
	if math.IsNaN(v) {
		b.AppendNull()
	} else {
		b.Append(v)
	}
}

// WriteRequest implements RequestSink.
func (a *arrowRequestWriter) WriteRequest(m *RequestMetrics) error {
	f := a.b.Fields()
	f[0].(*array.Int64Builder).Append(int64(m.RequestID))
	appendNullable(f[1].(*array.Float64Builder), m.ArrivalS)
	f[2].(*array.Int64Builder).Append(int64(m.PromptTokens))
	f[3].(*array.Int64Builder).Append(int64(m.OutputTokens))
	for i, v := range [...]float64{m.FirstTokenS, m.FinishS, m.TTFTMs, m.TPOTMs, m.E2EMs, m.MeanITLMs, m.KVTransferMs} {
		appendNullable(f[4+i].(*array.Float64Builder), v)
	}
	f[11].(*array.Int64Builder).Append(int64(m.Preemptions))
	f[12].(*array.Int64Builder).Append(int64(m.CachedPromptTokens))
	if a.host {
		f[13].(*array.Int64Builder).Append(int64(m.HostCachedPromptTokens))
	}
	f[len(f)-1].(*array.StringBuilder).Append(m.Status)
	a.rows++
	if a.rows == arrowBatchRows {
		return a.flush()
	}
	return nil
}

func (a *arrowRequestWriter) flush() error {
	if a.rows == 0 {
		return nil
	}
	rec := a.b.NewRecordBatch()
	defer rec.Release()
	a.rows = 0
	return a.fw.Write(rec)
}

// close writes the last batch and the file footer.
func (a *arrowRequestWriter) close() error {
	err := a.flush()
	a.b.Release()
	if cerr := a.fw.Close(); err == nil {
		err = cerr
	}
	return err
}

// RequestFiles writes requests.csv and requests.arrow as requests finish.
type RequestFiles struct {
	csvFile, arrowFile *atomicfile.File
	csv                *csvRequestWriter
	arrow              *arrowRequestWriter
}

// CreateRequestFiles starts requests.csv and requests.arrow in dir; each
// finished request is written as it comes (WriteRequest), and the files
// appear only on Commit. host adds the column of a run with a host tier
// (host_cached_prompt_tokens); without it the files are as they always
// were.
func CreateRequestFiles(dir string, host bool) (*RequestFiles, error) {
	rf := &RequestFiles{}
	var err error
	if rf.csvFile, err = atomicfile.Create(filepath.Join(dir, RequestsCSVFile)); err != nil {
		return nil, err
	}
	if rf.arrowFile, err = atomicfile.Create(filepath.Join(dir, RequestsArrowFile)); err != nil {
		rf.csvFile.Abort()
		return nil, err
	}
	if rf.csv, err = newCSVRequestWriter(rf.csvFile.Writer, host); err == nil {
		rf.arrow, err = newArrowRequestWriter(rf.arrowFile.Writer, host)
	}
	if err != nil {
		rf.Abort()
		return nil, fmt.Errorf("requests files in %s: %w", dir, err)
	}
	return rf, nil
}

// WriteRequest implements RequestSink.
func (rf *RequestFiles) WriteRequest(m *RequestMetrics) error {
	if err := rf.csv.WriteRequest(m); err != nil {
		return fmt.Errorf("write %s: %w", rf.csvFile.Path(), err)
	}
	if err := rf.arrow.WriteRequest(m); err != nil {
		return fmt.Errorf("write %s: %w", rf.arrowFile.Path(), err)
	}
	return nil
}

// Commit finishes both files and renames them into place.
func (rf *RequestFiles) Commit() error {
	files, err := rf.Finish()
	if err != nil {
		return err
	}
	return atomicfile.CommitAll(files...)
}

// Finish ends the Arrow stream and returns both files, still under their
// temporary names, for the caller to commit with the rest of its outputs
// (atomicfile.CommitAll); on failure both are removed.
func (rf *RequestFiles) Finish() ([]*atomicfile.File, error) {
	if err := rf.arrow.close(); err != nil {
		rf.Abort()
		return nil, fmt.Errorf("write %s: %w", rf.arrowFile.Path(), err)
	}
	return []*atomicfile.File{rf.csvFile, rf.arrowFile}, nil
}

// Abort discards both files.
func (rf *RequestFiles) Abort() {
	rf.csvFile.Abort()
	rf.arrowFile.Abort()
}

// ReadRequestMetrics reads a per-request file written by a run:
// requests.csv or requests.arrow (by extension).
func ReadRequestMetrics(path string) ([]RequestMetrics, error) {
	switch filepath.Ext(path) {
	case ".csv":
		return readRequestsCSV(path)
	case ".arrow":
		return readRequestsArrow(path)
	}
	return nil, fmt.Errorf("requests %s: want a .csv or .arrow file", path)
}

func readRequestsCSV(path string) ([]RequestMetrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("requests %s: %w", path, err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("requests %s line 1: %w", path, err)
	}
	host := strings.Join(header, ",") == strings.Join(hostRequestColumns, ",")
	if !host && strings.Join(header, ",") != strings.Join(requestColumns, ",") {
		return nil, fmt.Errorf("requests %s line 1: header %q, want %q (or, with a host tier, %q)", path, strings.Join(header, ","),
			strings.Join(requestColumns, ","), strings.Join(hostRequestColumns, ","))
	}
	columns := columnsOf(host)
	var out []RequestMetrics
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("requests %s line %d: %w", path, line, err)
		}
		var m RequestMetrics
		ints := []*int{&m.RequestID, nil, &m.PromptTokens, &m.OutputTokens, nil, nil, nil, nil, nil, nil, nil, &m.Preemptions, &m.CachedPromptTokens, &m.HostCachedPromptTokens}
		floats := []*float64{nil, &m.ArrivalS, nil, nil, &m.FirstTokenS, &m.FinishS, &m.TTFTMs, &m.TPOTMs, &m.E2EMs, &m.MeanITLMs, &m.KVTransferMs}
		for i, v := range rec[:len(columns)-1] {
			if p := ints[i]; p != nil {
				if *p, err = strconv.Atoi(v); err != nil {
					return nil, fmt.Errorf("requests %s line %d column %s: want an integer, got %q", path, line, columns[i], v)
				}
				continue
			}
			*floats[i] = math.NaN()
			if v != "" {
				if *floats[i], err = strconv.ParseFloat(v, 64); err != nil {
					return nil, fmt.Errorf("requests %s line %d column %s: want a number, got %q", path, line, columns[i], v)
				}
			}
		}
		m.Status = rec[len(columns)-1]
		if m.Status != StatusCompleted && m.Status != StatusRejected {
			return nil, fmt.Errorf("requests %s line %d column status: want %s or %s, got %q", path, line, StatusCompleted, StatusRejected, m.Status)
		}
		out = append(out, m)
	}
}

func readRequestsArrow(path string) ([]RequestMetrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("requests %s: %w", path, err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		return nil, fmt.Errorf("requests %s: %w", path, err)
	}
	defer r.Close()
	host := r.Schema().Equal(hostRequestSchema)
	if !host && !r.Schema().Equal(requestSchema) {
		return nil, fmt.Errorf("requests %s: schema %s, want %s (or, with a host tier, %s)", path, r.Schema(), requestSchema, hostRequestSchema)
	}
	var out []RequestMetrics
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return nil, fmt.Errorf("requests %s batch %d: %w", path, i, err)
		}
		col := func(j int) arrow.Array { return rec.Column(j) }
		fl := func(j, row int) float64 {
			a := col(j).(*array.Float64)
			if a.IsNull(row) {
				return math.NaN()
			}
			return a.Value(row)
		}
		in := func(j, row int) int { return int(col(j).(*array.Int64).Value(row)) }
		status := int(rec.NumCols()) - 1
		for row := 0; row < int(rec.NumRows()); row++ {
			m := RequestMetrics{RequestID: in(0, row), ArrivalS: fl(1, row), PromptTokens: in(2, row),
				OutputTokens: in(3, row), FirstTokenS: fl(4, row), FinishS: fl(5, row), TTFTMs: fl(6, row),
				TPOTMs: fl(7, row), E2EMs: fl(8, row), MeanITLMs: fl(9, row), KVTransferMs: fl(10, row),
				Preemptions: in(11, row), CachedPromptTokens: in(12, row), Status: col(status).(*array.String).Value(row)}
			if host {
				m.HostCachedPromptTokens = in(13, row)
			}
			out = append(out, m)
		}
	}
	return out, nil
}
