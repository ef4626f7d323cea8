package publicrun

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
)

// ErrorsFile is the table of ftk's measured error on every metric of every
// run (errors.csv in this package), written by the replays that write
// docs/validation.md (make validation) and checked by them for staleness.
const ErrorsFile = "errors.csv"

//go:embed errors.csv
var errorsCSV string

// MeasuredError is ftk's error on one measured metric of one run: the
// replay's figure against the published one, signed, in percent
// (ErrorPct).
// The run's class is what search's error bands group by: whether the model
// is a mixture of experts, the device and the execution mode (as
// replayed).
type MeasuredError struct {
	Run           string
	Role          string // RoleFitted or RoleHeldOut
	MoE           bool
	Device        string
	ExecutionMode string
	Metric        string
	ErrorPct      float64
}

// errorsHeader is errors.csv's first line.
var errorsHeader = []string{"run", "role", "moe", "device", "execution_mode", "metric", "error_pct"}

// Errors reads the measured errors (ErrorsFile), in the order written.
func Errors() ([]MeasuredError, error) {
	recs, err := csv.NewReader(strings.NewReader(errorsCSV)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("publicrun/%s: %w", ErrorsFile, err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(errorsHeader, ",") {
		return nil, fmt.Errorf("publicrun/%s: want the header %v: run make validation", ErrorsFile, errorsHeader)
	}
	var out []MeasuredError
	for i, rec := range recs[1:] {
		v, err := strconv.ParseFloat(rec[6], 64)
		if err != nil {
			return nil, fmt.Errorf("publicrun/%s: row %d, column error_pct: %w", ErrorsFile, i+2, err)
		}
		moe, err := strconv.ParseBool(rec[2])
		if err != nil {
			return nil, fmt.Errorf("publicrun/%s: row %d, column moe: %w", ErrorsFile, i+2, err)
		}
		out = append(out, MeasuredError{Run: rec[0], Role: rec[1], MoE: moe, Device: rec[3], ExecutionMode: rec[4], Metric: rec[5], ErrorPct: v})
	}
	return out, nil
}

// ErrorsTable is the content of ErrorsFile for errs.
func ErrorsTable(errs []MeasuredError) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(errorsHeader) // a strings.Builder does not fail
	for _, e := range errs {
		_ = w.Write([]string{e.Run, e.Role, strconv.FormatBool(e.MoE), e.Device, e.ExecutionMode, e.Metric, strconv.FormatFloat(e.ErrorPct, 'f', 2, 64)})
	}
	w.Flush()
	return b.String()
}
