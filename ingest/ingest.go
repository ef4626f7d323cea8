package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// Options control an ingest run.
type Options struct {
	// Device labels every input with this device (catalog name or alias),
	// whatever its folder or YAML says.
	Device string
	// Model labels every model-specific input with this model.
	Model string
	// Strict fails the run when any row is excluded.
	Strict bool
	// Measurement is the measurement type (spec.CUDAEvent, spec.KernelOnly)
	// of the files that do not say theirs (no measurement_type column, or
	// blank on every row), instead of what their dialect or name implies.
	Measurement string
}

// Ingest reads the profile CSV files at paths (files, or folders walked for
// *.csv) and writes the dataset to dir atomically: the Arrow files and then
// manifest.json appear only when everything was read and written. It
// returns the manifest as written; Load reads the samples back.
func Ingest(paths []string, dir string, opt Options) (*dataset.Manifest, error) {
	b, err := read(paths, opt)
	if err != nil {
		return nil, err
	}
	if err := b.write(dir); err != nil {
		return nil, err
	}
	return &b.m, nil
}

// outFile is one Arrow file of a dataset being built.
type outFile struct {
	name        string
	family      spec.Family
	measurement string
	recs        []*record // in file order
	inputs      []int32   // the inputs of the records
}

// build is a dataset read into memory, ready to write.
type build struct {
	m     dataset.Manifest
	files []*outFile // by name
	tab   *strTable
	ext   [][]xval // per input: its rows' extras
	xseen [][]bool // per input: the extras with a non-blank cell
	bytes int64    // input bytes read
}

// read reads and validates every input.
func read(paths []string, opt Options) (*build, error) {
	files, err := expand(paths)
	if err != nil {
		return nil, err
	}
	res := newResolver(opt)
	tab := newStrTable()
	var (
		inputs   []dataset.Input
		all      []*parsed
		collects []*collectMeta
		total    int64
	)
	seenCollect := map[*collectMeta]bool{}
	seenSum := map[[sha256.Size]byte]string{} // content hash -> first path
	var identical []dataset.IdenticalFile
	var buf []byte // reused: records keep no reference into it
	for _, f := range files {
		data, err := readInto(f, buf)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		buf = data
		sum := sha256.Sum256(data)
		total += int64(len(data))
		org, err := res.resolve(f)
		if err != nil {
			return nil, fmt.Errorf("ingest %s: %w", f, err)
		}
		if c := org.collect; c != nil && !seenCollect[c] {
			seenCollect[c] = true
			collects = append(collects, c) // checked even when the file is a copy
		}
		if first, ok := seenSum[sum]; ok {
			identical = append(identical, dataset.IdenticalFile{Path: f, SameAs: first, SHA256: hex.EncodeToString(sum[:])})
			continue // a copy: its rows would be counted twice
		}
		seenSum[sum] = f
		in := dataset.Input{Path: f, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data)),
			Device: org.device, DeviceFrom: org.deviceFrom, Model: org.model, ModelFrom: org.modelFrom}
		if c := org.collect; c != nil {
			if c.status == "incomplete" {
				in.Notes = append(in.Notes, fmt.Sprintf("WARNING: %s says status: incomplete (%d shapes failed, or the sweep was interrupted): its files miss shapes the sweep planned; run the same 'ftk collect' command again to finish it", c.path, c.failed))
			}
			if c.shardN > 0 {
				in.Shard = fmt.Sprintf("%d/%d", c.shardI, c.shardN)
			}
		}
		p, err := readCSV(&in, int32(len(inputs)), data, org, tab)
		if err != nil {
			return nil, err
		}
		if in.Family == string(spec.FamilyCollective) {
			in.Model, in.ModelFrom = "", ""
		}
		if err := profilingBackend(&in, p, tab, org); err != nil {
			return nil, err
		}
		measuredAt(&in, p, org)
		if in.Device == "" {
			return nil, &RowError{Path: f, Msg: fmt.Sprintf("cannot tell the device: no --device flag, no YAML with a device: key beside it, and no device name (%s) in its path", strings.Join(spec.DeviceNames(), ", "))}
		}
		inputs = append(inputs, in)
		all = append(all, p)
	}
	if err := checkShards(collects); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if err := oneDevice(inputs); err != nil {
		return nil, err
	}
	if opt.Strict {
		if err := strictCheck(inputs); err != nil {
			return nil, err
		}
	}
	b := assemble(inputs, all, tab)
	b.m.IdenticalFiles = identical
	b.m.Backends = backends(inputs)
	b.m.MeasuredAt, b.m.BlockSizes = dataset.MeasuredAt(b.m.Inputs)
	b.bytes = total
	return b, nil
}

// readInto reads the file at path into buf, growing it as needed.
func readInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if n := int(st.Size()) + 1; cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	buf = buf[:0]
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) { // the file grew
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// expand lists the CSV files of paths in order: files as given, folders
// walked in lexical order (hidden entries skipped). A file named twice (a
// folder given twice, or a folder and one inside it) is read once; a
// folder with no CSV file under it is an error.
func expand(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("ingest: no input paths")
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		if !st.IsDir() {
			add(p)
			continue
		}
		found := 0 // CSV files under p, whether or not named before
		err = walkCSV(p, func(q string) {
			found++
			add(q)
		})
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		if found == 0 {
			return nil, fmt.Errorf("ingest: no CSV files under %s: point it at profiling CSVs (ftk collect output, Frontier or Vidur folders)", p)
		}
	}
	return out, nil
}

// walkCSV calls visit with every .csv file under root, in lexical order,
// skipping hidden names and following symbolic links to folders (a sweep
// linked in from elsewhere); a folder reached twice (a link loop, or two
// links to one folder) is read once.
func walkCSV(root string, visit func(path string)) error {
	seen := map[string]bool{}
	var walk func(dir string) error
	walk = func(dir string) error {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return err
		}
		if seen[real] {
			return nil
		}
		seen[real] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			q := filepath.Join(dir, e.Name())
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				if st, err := os.Stat(q); err == nil {
					isDir = st.IsDir()
				}
			}
			switch {
			case isDir:
				if err := walk(q); err != nil {
					return err
				}
			case strings.EqualFold(filepath.Ext(q), ".csv"):
				visit(q)
			}
		}
		return nil
	}
	return walk(root)
}

// oneDevice fails when the inputs span several devices.
func oneDevice(inputs []dataset.Input) error {
	first := map[string]string{}
	var devs []string
	for _, in := range inputs {
		if _, ok := first[in.Device]; !ok {
			first[in.Device] = in.Path
			devs = append(devs, in.Device)
		}
	}
	if len(devs) < 2 {
		return nil
	}
	sort.Strings(devs)
	parts := make([]string, len(devs))
	for i, d := range devs {
		parts[i] = fmt.Sprintf("%s (%s)", d, first[d])
	}
	return fmt.Errorf("ingest: inputs span several devices: %s; a dataset is one device: ingest each device's files separately, or pass --device to label them all", strings.Join(parts, ", "))
}

// strictCheck fails on the first excluded row.
func strictCheck(inputs []dataset.Input) error {
	n := 0
	var first error
	for i := range inputs {
		in := &inputs[i]
		if d, ok := firstExcluded(in); ok && first == nil {
			first = &RowError{Path: in.Path, Line: d.line, Column: d.column, Msg: d.describe()}
		}
		n += in.ExcludedRows
	}
	if first != nil {
		return fmt.Errorf("%w (--strict: %d rows or operators of rows excluded)", first, n)
	}
	return nil
}
