package collect

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// TestSyntheticRowsAreNotKernelTraced: ftk ingest reports CUDA_EVENT rows
// whose samples are whole nanoseconds as kernel time (spec.KernelTraced);
// no CUDA_EVENT row collect writes from the synthetic backend may read so.
func TestSyntheticRowsAreNotKernelTraced(t *testing.T) {
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), smallLimits, []spec.Layout{{TP: 2, EP: 2}})
	if _, err := Run(context.Background(), syntheticOptions(t, dir, c)); err != nil {
		t.Fatal(err)
	}
	sweep := SweepDir(dir, "h800", "tiny-moe", Shard{})
	event := 0
	for _, f := range csvFiles(t, sweep) {
		h, rows := readCSV(t, filepath.Join(sweep, f))
		meas := -1
		for i, n := range h {
			if n == profilecsv.ColMeasurementType {
				meas = i
			}
		}
		for li, row := range rows {
			if meas < 0 || row[meas] != spec.CUDAEvent {
				continue
			}
			event++
			var samplesMs []float64
			for i, n := range h {
				if strings.HasPrefix(n, "time_stats.") && (strings.HasSuffix(n, ".min") || strings.HasSuffix(n, ".max")) {
					if v, err := strconv.ParseFloat(row[i], 64); err == nil {
						samplesMs = append(samplesMs, v)
					}
				}
			}
			if spec.KernelTraced(samplesMs) {
				t.Errorf("%s:%d: CUDA_EVENT row reads as kernel time: %v", f, li+2, samplesMs)
			}
		}
	}
	if event == 0 {
		t.Fatal("the sweep wrote no CUDA_EVENT row")
	}
}
