package collect

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// appender appends rows to one output CSV as they are measured. Each row
// is one write(2), so a killed process leaves at most a torn last line;
// the file is fsynced at most every syncEvery and on Close, so a machine
// crash loses at most that much.
type appender struct {
	path     string
	f        *os.File
	header   []string
	rows     int             // data rows in the file
	ids      map[string]bool // shape IDs with a row in the file
	idCol    int
	lastSync time.Time
	buf      bytes.Buffer
	w        *csv.Writer
}

const syncEvery = time.Second

// existing is what a previous run left in a file.
type existing struct {
	done     map[string]bool // shape IDs with a complete row
	rows     int
	tornTail int // bytes of a torn last line, dropped
}

// openAppender opens path for appending rows under header, creating it
// (with the header) if absent. An existing file must have the same header;
// its shape IDs are returned so the sweep skips them, and a torn last line
// (a row cut by a crash) is cut off.
func openAppender(path string, header []string) (*appender, existing, error) {
	ex := existing{done: map[string]bool{}}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, ex, err
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = nil
	case err != nil:
		return nil, ex, err
	}
	a := &appender{path: path, header: header}
	a.w = csv.NewWriter(&a.buf)
	if len(data) > 0 {
		good := bytes.LastIndexByte(data, '\n') + 1
		ex.tornTail = len(data) - good
		if ex.done, ex.rows, err = readDone(path, data[:good], header); err != nil {
			return nil, ex, err
		}
		if ex.tornTail > 0 {
			if err := os.Truncate(path, int64(good)); err != nil {
				return nil, ex, fmt.Errorf("%s: cutting a torn last line: %w", path, err)
			}
		}
		if good == 0 { // only a torn header: start over
			data = nil
		}
	}
	a.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, ex, err
	}
	a.rows, a.ids, a.idCol = ex.rows, ex.done, slices.Index(header, "shape_id")
	if len(data) == 0 {
		if err := a.write(header); err != nil {
			a.f.Close()
			return nil, ex, err
		}
		a.rows = 0
	}
	return a, ex, nil
}

// readDone parses the complete lines of an existing file: header check,
// then the shape_id of every row.
func readDone(path string, data []byte, header []string) (map[string]bool, int, error) {
	done := map[string]bool{}
	if len(data) == 0 {
		return done, 0, nil
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = len(header)
	got, err := r.Read()
	if err != nil {
		return nil, 0, fmt.Errorf("%s line 1: %w", path, err)
	}
	if !slices.Equal(got, header) {
		return nil, 0, fmt.Errorf("%s: its columns differ from this sweep's (another model, layout or ftk version?): use --force to start over or another --out", path)
	}
	idCol := slices.Index(header, "shape_id")
	rows := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			line, _ := r.FieldPos(0)
			return nil, 0, fmt.Errorf("%s line %d: %w (fix or remove the file, or use --force)", path, line, err)
		}
		rows++
		done[rec[idCol]] = true
	}
	return done, rows, nil
}

// Append writes one row.
func (a *appender) Append(row []string) error {
	if err := a.write(row); err != nil {
		return err
	}
	a.rows++
	if a.idCol >= 0 {
		a.ids[row[a.idCol]] = true
	}
	return nil
}

func (a *appender) write(row []string) error {
	a.buf.Reset()
	if err := a.w.Write(row); err != nil {
		return err
	}
	a.w.Flush()
	if _, err := a.f.Write(a.buf.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", a.path, err)
	}
	if time.Since(a.lastSync) >= syncEvery {
		a.lastSync = time.Now()
		if err := a.f.Sync(); err != nil {
			return fmt.Errorf("%s: %w", a.path, err)
		}
	}
	return nil
}

// Close syncs and closes the file.
func (a *appender) Close() error {
	if err := a.f.Sync(); err != nil {
		a.f.Close()
		return fmt.Errorf("%s: %w", a.path, err)
	}
	return a.f.Close()
}
