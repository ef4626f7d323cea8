package ingest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
)

// deviceSets are the shared profile folders, one dataset (device) each;
// together they are every file under testdata/profiles.
var deviceSets = []string{"frontier-a800-qwen3-30b-a3b", "frontier-h800", "vidur-h100"}

// BenchmarkIngest ingests the whole shared profile set (one dataset per
// device folder) into a temporary folder and reports the throughput in MB/s
// of CSV input, Arrow writing included: "MB/s" over wall time and
// "cpu-MB/s" over the process's CPU time (steadier on a shared machine).
// It runs on one core (GOMAXPROCS 1, the garbage collector included):
// go test -run '^$' -bench Ingest ./ingest/.
func BenchmarkIngest(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // one core, the garbage collector included
	root := profilesDir(b)
	var total int64
	for _, s := range deviceSets {
		total += dirCSVBytes(b, filepath.Join(root, s))
	}
	b.SetBytes(total)
	out := b.TempDir()
	run := func() {
		for _, s := range deviceSets {
			if _, err := Ingest([]string{filepath.Join(root, s)}, filepath.Join(out, s), Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	run() // warm up (page cache, heap), so that -benchtime 1x measures the steady state
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		run()
	}
	mb := float64(total) * float64(b.N) / 1e6
	b.ReportMetric(mb/b.Elapsed().Seconds(), "MB/s")
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(mb/cpu.Seconds(), "cpu-MB/s")
	}
	b.ReportMetric(float64(total)/1e6, "MB")
}

// BenchmarkReadCSV is the CSV parsing and sample derivation alone, in
// memory, without the Arrow writer.
func BenchmarkReadCSV(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	root := profilesDir(b)
	type file struct {
		in   dataset.Input
		data []byte
	}
	var files []file
	var total int64
	for _, s := range deviceSets {
		paths, err := expand([]string{filepath.Join(root, s)})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			files = append(files, file{dataset.Input{Path: p}, data})
			total += int64(len(data))
		}
	}
	b.SetBytes(total)
	buf := make([]byte, 0, 4<<20)
	run := func() {
		for _, f := range files {
			buf = append(buf[:0], f.data...) // the scanner unescapes in place
			in := f.in
			if _, err := readCSV(&in, 0, buf, origin{device: "h100"}, newStrTable()); err != nil {
				b.Fatal(err)
			}
		}
	}
	run() // warm up
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.ReportMetric(float64(total)*float64(b.N)/1e6/b.Elapsed().Seconds(), "MB/s")
}

func dirCSVBytes(tb testing.TB, dir string) int64 {
	paths, err := expand([]string{dir})
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		n += st.Size()
	}
	return n
}
