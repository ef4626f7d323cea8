package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	recs        []*record
}

// build is a dataset read into memory, ready to write.
type build struct {
	m     Manifest
	files []*outFile // by name
	tab   *strTable
	bytes int64 // input bytes read
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
		all      [][]record
		collects []*collectMeta
		total    int64
	)
	seenCollect := map[*collectMeta]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
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
		recs, err := readCSV(&in, data, org, tab)
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
		all = append(all, recs...)
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
	b := assemble(inputs, all)
	b.tab, b.bytes = tab, total
	return b, nil
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
func assemble(inputs []Input, all [][]record) *build {
	byFile := map[string]*outFile{}
	n := 0
	for _, recs := range all {
		for i := range recs {
			rec := &recs[i]
			name := fmt.Sprintf("%s.%s.arrow", rec.family, rec.Key.Measurement)
			f := byFile[name]
			if f == nil {
				f = &outFile{name: name, family: rec.family, measurement: rec.Key.Measurement}
				byFile[name] = f
			}
			f.recs = append(f.recs, rec)
			n++
		}
	}
	b := &build{}
	for _, f := range byFile {
		sortRecords(f.recs)
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
	for _, f := range b.files {
		meas[f.measurement] = true
		for _, r := range f.recs {
			if r.Model != "" {
				models[r.Model] = true
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

// sameShape reports whether two samples of one file measure one shape:
// same model, key, features, variant and conditions.
func sameShape(a, b *record) bool {
	return a.Key == b.Key && a.Model == b.Model && slices.Equal(a.Features, b.Features) &&
		a.Variant == b.Variant && a.cond == b.cond
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
			c := Conflict{Key: g[0].Key.String(), Features: g[0].Features, Variant: g[0].Variant,
				MedianMinMs: math.Inf(1), MedianMaxMs: math.Inf(-1)}
			if g[0].Model != "" {
				c.Key = g[0].Model + " " + c.Key
			}
			for _, r := range g {
				r.Conflict = true
				c.MedianMinMs = math.Min(c.MedianMinMs, r.MedianMs)
				c.MedianMaxMs = math.Max(c.MedianMaxMs, r.MedianMs)
				c.Samples++
				if n := len(c.At); n == 0 || c.At[n-1].Source != r.Source {
					c.At = append(c.At, SourceLines{Source: r.Source})
				}
				at := &c.At[len(c.At)-1]
				at.Lines = append(at.Lines, r.Line)
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
		if !math.IsNaN(r.MinMs) && !math.IsNaN(r.MaxMs) {
			lo, hi = math.Max(lo, r.MinMs), math.Min(hi, r.MaxMs)
		}
		mlo, mhi = math.Min(mlo, r.MedianMs), math.Max(mhi, r.MedianMs)
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
