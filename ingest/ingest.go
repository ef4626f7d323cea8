package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

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
}

// ConflictTolerance is the relative difference of medians above which
// samples of one shape may conflict (see conflicting).
const ConflictTolerance = 0.10

// Ingest reads the profile CSV files at paths (files, or folders walked for
// *.csv) and writes the dataset to dir atomically: the Arrow files and then
// manifest.json appear only when everything was read and written. It
// returns the manifest as written; Load reads the samples back.
func Ingest(paths []string, dir string, opt Options) (*Manifest, error) {
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
}

// build is a dataset read into memory, ready to write.
type build struct {
	m     Manifest
	files []*outFile // by name
	tab   *strTable
	ext   [][]xval // per input: its rows' extras
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
		inputs   []Input
		all      []*parsed
		collects []*collectMeta
		total    int64
	)
	seenCollect := map[*collectMeta]bool{}
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
		in := Input{Path: f, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data)),
			Device: org.device, DeviceFrom: org.deviceFrom, Model: org.model, ModelFrom: org.modelFrom}
		if c := org.collect; c != nil {
			if c.shardN > 0 {
				in.Shard = fmt.Sprintf("%d/%d", c.shardI, c.shardN)
			}
			if !seenCollect[c] {
				seenCollect[c] = true
				collects = append(collects, c)
			}
		}
		p, err := readCSV(&in, int32(len(inputs)), data, org, tab)
		if err != nil {
			return nil, err
		}
		if in.Family == string(spec.FamilyCollective) {
			in.Model, in.ModelFrom = "", ""
		}
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
// walked in lexical order (hidden entries skipped). A file named twice is
// read once.
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
		n := len(out)
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if q != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(q), ".csv") {
				add(q)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		if len(out) == n {
			return nil, fmt.Errorf("ingest: no CSV files under %s", p)
		}
	}
	return out, nil
}

// oneDevice fails when the inputs span several devices.
func oneDevice(inputs []Input) error {
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
func strictCheck(inputs []Input) error {
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

// assemble sorts the records into output files, flags duplicated shapes
// and fills the manifest.
func assemble(inputs []Input, all []*parsed, tab *strTable) *build {
	type fileKey struct {
		family      spec.Family
		measurement string
	}
	b := &build{tab: tab}
	byFile := map[fileKey]*outFile{}
	n := 0
	for i, p := range all {
		b.ext = append(b.ext, p.ext)
		k := fileKey{p.family, inputs[i].Measurement}
		f := byFile[k]
		if f == nil && p.nRecs() > 0 {
			f = &outFile{name: fmt.Sprintf("%s.%s.arrow", k.family, k.measurement), family: k.family, measurement: k.measurement}
			byFile[k] = f
		}
		for _, chunk := range p.recs {
			for j := range chunk {
				f.recs = append(f.recs, &chunk[j])
			}
			n += len(chunk)
		}
	}
	rank := tab.ranks()
	srcRank := make([]int32, len(inputs))
	for i, r := range sortedIndex(len(inputs), func(a, c int) int { return strings.Compare(inputs[a].Path, inputs[c].Path) }) {
		srcRank[r] = int32(i)
	}
	for _, f := range byFile {
		sortRecords(f.recs, rank, srcRank)
		b.files = append(b.files, f)
	}
	slices.SortFunc(b.files, func(a, c *outFile) int { return strings.Compare(a.name, c.name) })

	m := &b.m
	m.Kind, m.SchemaVersion = ManifestKind, SchemaVersion
	m.Inputs = inputs
	models, meas := map[string]bool{}, map[string]bool{}
	for _, in := range inputs {
		m.Device = in.Device
		if in.Model != "" {
			models[in.Model] = true
		}
		m.ExcludedRows += in.ExcludedRows
	}
	seen := map[int32]bool{}
	for _, f := range b.files {
		meas[f.measurement] = true
		for _, r := range f.recs {
			if r.model != 0 && !seen[r.model] {
				seen[r.model] = true
				models[tab.strs[r.model]] = true
			}
		}
	}
	m.Models = sortedKeys(models)
	if len(m.Models) == 1 {
		m.Model = m.Models[0]
	}
	m.Measurements = sortedKeys(meas)
	b.flagDuplicates()
	m.Samples = n
	m.Notes = []string{
		"features are in spec.OpFeatures order; attention batches of several sequences are reduced with spec.PrefillEquivalent / spec.DecodeEquivalent (variant mixed or true_mixed)",
		"collective samples have no model: network timings do not depend on it",
		fmt.Sprintf("duplicated shapes are kept; they conflict (flagged) when their medians are more than %g%% apart and their [min, max] ranges do not all overlap", ConflictTolerance*100),
	}
	return b
}

func (p *parsed) nRecs() int {
	n := 0
	for _, c := range p.recs {
		n += len(c)
	}
	return n
}

// sortedIndex returns 0..n-1 ordered by compare.
func sortedIndex(n int, compare func(a, b int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, compare)
	return idx
}

// flagDuplicates counts duplicated shapes and marks conflicting ones. The
// files are sorted, so the samples of a shape are adjacent.
func (b *build) flagDuplicates() {
	m := &b.m
	m.Conflicts = []Conflict{}
	for _, f := range b.files {
		for i := 0; i < len(f.recs); {
			j := i + 1
			for j < len(f.recs) && sameShape(f.recs[i], f.recs[j]) {
				j++
			}
			g := f.recs[i:j]
			i = j
			if len(g) < 2 {
				continue
			}
			m.DuplicatedShapes++
			if !conflicting(g) {
				continue
			}
			r0 := g[0]
			c := Conflict{Key: b.key(r0).String(), Features: append([]float64(nil), r0.f[:r0.nf]...), Variant: variantNames[r0.variant],
				MedianMinMs: math.Inf(1), MedianMaxMs: math.Inf(-1)}
			if r0.model != 0 {
				c.Key = b.tab.strs[r0.model] + " " + c.Key
			}
			for _, r := range g {
				r.conflict = true
				c.MedianMinMs = math.Min(c.MedianMinMs, r.median)
				c.MedianMaxMs = math.Max(c.MedianMaxMs, r.median)
				c.Samples++
				src := m.Inputs[r.in].Path
				if n := len(c.At); n == 0 || c.At[n-1].Source != src {
					c.At = append(c.At, SourceLines{Source: src})
				}
				at := &c.At[len(c.At)-1]
				at.Lines = append(at.Lines, int(r.line))
			}
			m.Conflicts = append(m.Conflicts, c)
		}
	}
}

// conflicting reports whether samples of one shape disagree: their medians
// are more than ConflictTolerance apart and, where the format has min/max,
// their [min, max] ranges do not all overlap.
func conflicting(g []*record) bool {
	lo, hi := math.Inf(-1), math.Inf(1)
	mlo, mhi := math.Inf(1), math.Inf(-1)
	for _, r := range g {
		if !math.IsNaN(r.min) && !math.IsNaN(r.max) {
			lo, hi = math.Max(lo, r.min), math.Min(hi, r.max)
		}
		mlo, mhi = math.Min(mlo, r.median), math.Max(mhi, r.median)
	}
	return mhi > mlo*(1+ConflictTolerance) && lo > hi
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
