package fit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

func TestEmptyInput(t *testing.T) {
	if _, err := FromDataset(&dataset.Dataset{}, spec.CUDAEvent); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("empty dataset: %v", err)
	}
	if _, err := Fit(&TrainingSet{}, Options{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty training set: %v", err)
	}
	// A dataset of another measurement type only.
	_, err := FromDataset(loadProfiles(t, a800), spec.KernelOnly)
	if err == nil || !strings.Contains(err.Error(), "no KERNEL_ONLY samples (it has CUDA_EVENT)") {
		t.Errorf("A800 profiles as KERNEL_ONLY: %v", err)
	}
}

// TestThinKeys: a key with fewer shapes than a forest of its own needs is
// not fatal: it gets the pooled forest or the fallback, marked; only a
// training set without rows fails.
func TestThinKeys(t *testing.T) {
	ts := trainingSet(t, a800)
	thin := &TrainingSet{Device: ts.Device, Model: ts.Model, Measurement: ts.Measurement}
	for _, o := range ts.Ops[:3] {
		thin.Ops = append(thin.Ops, o)
	}
	thin.Ops[1].Rows = thin.Ops[1].Rows[:3]
	var log bytes.Buffer
	b, err := Fit(thin, Options{Trees: 4, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := b.Predictor(thin.Ops[1].Key)
	if !ok {
		t.Fatalf("no predictor for the thin key %s", thin.Ops[1].Key)
	}
	m := p.Meta()
	if m.Note == "" || (m.Model != bundle.ModelFallback && m.Model != bundle.ModelPooled) || !strings.Contains(m.Note, "3 rows") {
		t.Errorf("thin key not marked: model %q, note %q", m.Model, m.Note)
	}
	if !strings.Contains(log.String(), thin.Ops[1].Key.String()) || !strings.Contains(log.String(), "thin key") {
		t.Errorf("fit's log does not name the thin key:\n%s", log.String())
	}
	if q, _ := b.Predictor(thin.Ops[0].Key); q.Meta().Note != "" {
		t.Errorf("a key with enough rows is marked thin: %s", q.Meta().Note)
	}
	var sum bytes.Buffer
	if err := b.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "1 thin keys") {
		t.Errorf("summary does not list the thin key:\n%s", sum.String())
	}
	empty := &TrainingSet{Measurement: spec.CUDAEvent, Ops: []OpRows{{Key: thin.Ops[0].Key}}}
	if _, err := Fit(empty, Options{Trees: 4}); !errors.Is(err, ErrNoRows) {
		t.Errorf("a training set without rows: %v, want ErrNoRows", err)
	}
}

func TestBadRows(t *testing.T) {
	k := spec.OpKey{Op: spec.OpAttnPreProj, Measurement: spec.CUDAEvent, TP: 1}
	rows := func(mod func(r []Row)) *TrainingSet {
		var rs []Row
		for i := 1; i <= 8; i++ {
			rs = append(rs, Row{X: []float64{float64(i)}, TimeMs: float64(i), Source: "x.csv", Line: i + 1})
		}
		mod(rs)
		return &TrainingSet{Measurement: spec.CUDAEvent, Ops: []OpRows{{Key: k, Rows: rs}}}
	}
	tests := []struct {
		name string
		ts   *TrainingSet
		want string
	}{
		{"negative time", rows(func(r []Row) { r[2].TimeMs = -1 }), "x.csv:4: attn_pre_proj[CUDA_EVENT tp=1] time -1 ms"},
		{"NaN feature", rows(func(r []Row) { r[3].X[0] = nan() }), "x.csv:5: attn_pre_proj[CUDA_EVENT tp=1] feature num_tokens is NaN"},
		{"feature count", rows(func(r []Row) { r[0].X = []float64{1, 2} }), "x.csv:2: attn_pre_proj[CUDA_EVENT tp=1] has 2 features, want 1"},
		{"mixed measurement", func() *TrainingSet {
			ts := rows(func([]Row) {})
			ts.Ops[0].Key.Measurement = spec.KernelOnly
			return ts
		}(), "one bundle holds one measurement type"},
	}
	for _, tc := range tests {
		_, err := Fit(tc.ts, Options{Trees: 2})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

func nan() float64 { var z float64; return z / z }

// smallBundle fits a few A800 predictors quickly.
func smallBundle(t *testing.T, seed uint64) *bundle.Bundle {
	t.Helper()
	ts := trainingSet(t, a800)
	sub := &TrainingSet{Device: ts.Device, Model: ts.Model, Measurement: ts.Measurement, Checksum: ts.Checksum}
	for _, o := range ts.Ops {
		if o.Key.TP == 4 && (o.Key.Op == spec.OpAttnPrefill || o.Key.Op == spec.OpAttnPreProj) {
			sub.Ops = append(sub.Ops, o)
		}
	}
	b, err := Fit(sub, Options{Seed: seed, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBundleMismatch(t *testing.T) {
	b := smallBundle(t, 1)
	if err := b.Check("a800-80gb", spec.CUDAEvent); err != nil {
		t.Errorf("matching device alias refused: %v", err)
	}
	if err := b.Check("h100", ""); err == nil || !strings.Contains(err.Error(), "for device a800, not h100") {
		t.Errorf("other device: %v", err)
	}
	if err := b.Check("", spec.KernelOnly); err == nil || !strings.Contains(err.Error(), "holds CUDA_EVENT predictors, not KERNEL_ONLY") {
		t.Errorf("other measurement: %v", err)
	}
	// validate ops of an A800 bundle on H800 rows.
	if _, err := Report(b, trainingSet(t, h800Tiny)); err == nil || !strings.Contains(err.Error(), "not h800") {
		t.Errorf("report on another device's dataset: %v", err)
	}
}

func TestCorruptBundle(t *testing.T) {
	b := smallBundle(t, 1)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.arrow")
	if err := b.Write(good); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, d []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A threshold or leaf value changed: the file still parses. The byte
	// flipped is the first non-zero one from the middle on, so that it is
	// data and not an Arrow buffer's zero padding (which no reader uses).
	flipped := bytes.Clone(data)
	at := len(flipped) / 2
	for at < len(flipped)-1 && flipped[at] == 0 {
		at++
	}
	flipped[at] ^= 0x40
	meta := *b.Meta()
	meta.SchemaVersion = bundle.SchemaVersion + 1
	var models []*bundle.Model
	for _, pm := range meta.Predictors {
		p, _ := b.Predictor(pm.Key)
		models = append(models, p.Model())
	}
	old := bundle.New(meta, models)
	var oldBuf bytes.Buffer
	if err := old.Encode(&oldBuf); err != nil {
		t.Fatal(err)
	}
	ds := loadProfiles(t, h800Tiny)
	_ = ds
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.arrow"), "no such file"},
		{"truncated", write("trunc.arrow", data[:len(data)/3]), "not an Arrow IPC file"},
		{"not arrow", write("text.arrow", []byte("time_stats.emb.median\n0.1\n")), "not an Arrow IPC file"},
		{"flipped byte", write("flip.arrow", flipped), "corrupted bundle"},
		{"other version", write("v2.arrow", oldBuf.Bytes()), fmt.Sprintf("bundle schema version %d, this ftk reads version %d", bundle.SchemaVersion+1, bundle.SchemaVersion)},
	}
	for _, tc := range tests {
		_, err := bundle.Load(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), tc.path) && tc.name != "missing" {
			t.Errorf("%s: error %q does not name the file", tc.name, err)
		}
	}
	if _, err := bundle.Load(good); err != nil {
		t.Errorf("good bundle: %v", err)
	}
}

// TestCorruptBundleNeverPanics: any single flipped byte or truncation is
// either refused with an error or harmless (padding): a bundle that loads
// predicts exactly as the original.
func TestCorruptBundleNeverPanics(t *testing.T) {
	b := smallBundle(t, 1)
	var buf bytes.Buffer
	if err := b.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	probe := func(lb *bundle.Bundle) bool {
		for _, k := range b.Keys() {
			p1, _ := b.Predictor(k)
			p2, ok := lb.Predictor(k)
			if !ok {
				return false
			}
			for _, x := range queries(p1, 64) {
				if p1.PredictMs(x) != p2.PredictMs(x) {
					return false
				}
			}
		}
		return true
	}
	refused, harmless := 0, 0
	step := max(1, len(data)/400)
	for i := 0; i < len(data); i += step {
		for _, mut := range [][]byte{
			func() []byte { d := bytes.Clone(data); d[i] ^= 0xff; return d }(),
			data[:i],
		} {
			lb, err := bundle.Decode(mut)
			switch {
			case err != nil:
				refused++
			case probe(lb):
				harmless++
			default:
				t.Fatalf("corruption at byte %d of %d loaded and predicts differently", i, len(data))
			}
		}
	}
	t.Logf("%d corruptions refused, %d harmless (padding)", refused, harmless)
}
