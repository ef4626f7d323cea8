package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// csvRow is one record of a CSV file read with encoding/csv, an
// implementation independent of ours.
type csvRow struct {
	line  int
	cells map[string]string
}

// readRef reads a CSV file with encoding/csv.
func readRef(t *testing.T, path string) []csvRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	var rows []csvRow
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		line, _ := r.FieldPos(0)
		row := csvRow{line: line, cells: map[string]string{}}
		for i, h := range header {
			row.cells[h] = rec[i]
		}
		rows = append(rows, row)
	}
}

// datasets ingests each shared device folder once per test binary.
var datasets = struct {
	sync.Mutex
	m map[string]*dataset.Dataset
}{m: map[string]*dataset.Dataset{}}

// sharedDataset returns the dataset of one testdata/profiles folder,
// ingested and loaded back.
func sharedDataset(t *testing.T, set string) *dataset.Dataset {
	t.Helper()
	datasets.Lock()
	defer datasets.Unlock()
	if d, ok := datasets.m[set]; ok {
		return d
	}
	dir := filepath.Join(t.TempDir(), set)
	if _, err := Ingest([]string{filepath.Join(profilesDir(t), set)}, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	datasets.m[set] = d
	return d
}

// TestEverySharedProfileIngests ingests each device folder of
// testdata/profiles and checks the manifest against the files: every CSV
// is an input with its sha256, family and a row count equal to what
// encoding/csv reads.
func TestEverySharedProfileIngests(t *testing.T) {
	root := profilesDir(t)
	wantDevice := map[string]string{"frontier-a800-qwen3-30b-a3b": "a800", "frontier-h800": "h800", "vidur-h100": "h100"}
	seen := 0
	for _, set := range deviceSets {
		d := sharedDataset(t, set)
		m := d.Manifest
		if m.Device != wantDevice[set] || m.Kind != dataset.ManifestKind || m.SchemaVersion != dataset.SchemaVersion {
			t.Errorf("%s: device %q kind %q schema %d", set, m.Device, m.Kind, m.SchemaVersion)
		}
		if m.Samples != len(d.Samples) || m.Samples == 0 {
			t.Errorf("%s: manifest says %d samples, loaded %d", set, m.Samples, len(d.Samples))
		}
		for _, in := range m.Inputs {
			seen++
			if rows := readRef(t, in.Path); len(rows) != in.RowsIn {
				t.Errorf("%s: %d rows in, encoding/csv reads %d", in.Path, in.RowsIn, len(rows))
			}
			data, err := os.ReadFile(in.Path)
			if err != nil {
				t.Fatal(err)
			}
			if in.SHA256 != sha256Hex(data) || in.Bytes != int64(len(data)) {
				t.Errorf("%s: sha256/bytes differ from the file", in.Path)
			}
			if in.Device != m.Device || in.RowsOut == 0 || in.Samples == 0 {
				t.Errorf("%s: device %q, %d rows out, %d samples", in.Path, in.Device, in.RowsOut, in.Samples)
			}
			wantFam := map[string]string{"attention": "attention", "linear_op": "linear_op", "moe": "moe", "mlp": "linear_op", "all_reduce": "collective", "send_recv": "collective"}
			base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(in.Path), ".csv"), "_kernel_only")
			base = strings.TrimSuffix(base, "_combined")
			if in.Family != wantFam[base] {
				t.Errorf("%s: family %q, want %q", in.Path, in.Family, wantFam[base])
			}
		}
	}
	var all int
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".csv") {
			all++
		}
		return err
	})
	if seen != all {
		t.Errorf("ingested %d inputs, testdata/profiles holds %d CSV files", seen, all)
	}
}

func sha256Hex(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// countKey counts samples per "op tp" of one source file.
func countKey(d *dataset.Dataset, source string) map[string]int {
	got := map[string]int{}
	for _, s := range d.Samples {
		if s.Source == source {
			got[fmt.Sprintf("%s tp=%d", s.Key.Op, s.Key.TP)]++
		}
	}
	return got
}

// TestRowCountsPerOperatorAndTP counts, independently from the CSV cells,
// how many samples each operator and TP degree must have, and compares.
func TestRowCountsPerOperatorAndTP(t *testing.T) {
	root := profilesDir(t)
	nonBlank := func(r csvRow, op string) bool { return r.cells["time_stats."+op+".median"] != "" }
	allZero := func(r csvRow, op string) bool {
		for _, s := range []string{"min", "max", "mean", "median"} {
			if v, _ := strconv.ParseFloat(r.cells["time_stats."+op+"."+s], 64); v != 0 {
				return false
			}
		}
		return true
	}
	tokenOps := []string{spec.OpAttnInputReshape, spec.OpAttnKVCacheSave, spec.OpAttnOutputReshape}
	for _, tc := range []struct {
		set, file string
		tpCol     string
		// want says how many samples of op a row gives.
		want func(r csvRow, op string) int
		ops  []string
	}{
		{"frontier-a800-qwen3-30b-a3b", "frontier-a800-qwen3-30b-a3b/linear_op.csv", "num_tensor_parallel_workers",
			func(r csvRow, op string) int { return b2i(nonBlank(r, op)) },
			[]string{"attn_pre_proj", "attn_rope", "attn_post_proj", "emb", "input_layernorm", "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "mtp_fusion_proj", "lm_head_linear"}},
		{"vidur-h100", "vidur-h100/Llama-2-7b-hf/mlp.csv", "num_tensor_parallel_workers",
			func(r csvRow, op string) int { return b2i(nonBlank(r, op)) },
			[]string{"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"}},
		{"frontier-h800", "frontier-h800/Qwen3-30B-A3B-tiny/moe.csv", "num_tensor_parallel_workers",
			func(r csvRow, op string) int { return b2i(nonBlank(r, op)) },
			[]string{spec.OpMoEGatingLinear, spec.OpMoERoutingTopK, spec.OpMoEShuffling, spec.OpMoEGroupedGEMM}},
		{"vidur-h100", "vidur-h100/network-h100_dgx/all_reduce.csv", "num_workers",
			func(r csvRow, op string) int { return b2i(nonBlank(r, op)) }, []string{spec.OpAllReduce}},
		{"frontier-h800", "frontier-h800/Phi-tiny-MoE-instruct/attention.csv", "num_tensor_parallel_workers",
			func(r csvRow, op string) int {
				trueMixed := r.cells["is_true_mixed_batch"] == "True"
				prefill := r.cells["is_prefill"] == "True"
				switch op {
				case spec.OpAttnPrefill:
					return b2i(prefill || trueMixed)
				case spec.OpAttnDecode:
					return b2i(!prefill || trueMixed)
				}
				return 1
			}, append([]string{spec.OpAttnPrefill, spec.OpAttnDecode}, tokenOps...)},
		{"frontier-a800-qwen3-30b-a3b", "frontier-a800-qwen3-30b-a3b/attention.csv", "num_tensor_parallel_workers",
			func(r csvRow, op string) int {
				trueMixed := r.cells["is_true_mixed_batch"] == "True"
				prefill := r.cells["is_prefill"] == "True"
				switch op {
				case spec.OpAttnPrefill:
					return b2i(prefill || trueMixed)
				case spec.OpAttnDecode:
					return b2i(!prefill || trueMixed)
				}
				return b2i(!allZero(r, op)) // all-zero CUDA_EVENT cells: not timed, excluded
			}, append([]string{spec.OpAttnPrefill, spec.OpAttnDecode}, tokenOps...)},
		{"frontier-h800", "frontier-h800/llama2_7b_dense_example/attention_kernel_only.csv", "num_tensor_parallel_workers",
			func(r csvRow, op string) int {
				trueMixed := r.cells["is_true_mixed_batch"] == "True"
				prefill := r.cells["is_prefill"] == "True"
				switch op {
				case spec.OpAttnPrefill:
					return b2i(prefill || trueMixed)
				case spec.OpAttnDecode:
					return b2i(!prefill || trueMixed)
				}
				return 1 // all-zero KERNEL_ONLY reshapes (no kernel) are kept
			}, append([]string{spec.OpAttnPrefill, spec.OpAttnDecode}, tokenOps...)},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d := sharedDataset(t, tc.set)
			src := filepath.Join(root, tc.file)
			want := map[string]int{}
			for _, r := range readRef(t, src) {
				for _, op := range tc.ops {
					if n := tc.want(r, op); n > 0 {
						want[fmt.Sprintf("%s tp=%s", op, r.cells[tc.tpCol])] += n
					}
				}
			}
			got := countKey(d, src)
			if len(want) == 0 || len(got) != len(want) {
				t.Errorf("keys: got %v\nwant %v", got, want)
			}
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s: %d samples, the CSV says %d", k, got[k], n)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestValuesEqualCSVCells checks every sample of several files against the
// CSV cells at its line: the statistics read back from Arrow equal
// strconv.ParseFloat of the cells, bit for bit, and the features follow
// the documented derivations.
func TestValuesEqualCSVCells(t *testing.T) {
	root := profilesDir(t)
	for _, tc := range []struct{ set, file string }{
		{"frontier-a800-qwen3-30b-a3b", "frontier-a800-qwen3-30b-a3b/linear_op.csv"},
		{"frontier-a800-qwen3-30b-a3b", "frontier-a800-qwen3-30b-a3b/attention.csv"},
		{"frontier-h800", "frontier-h800/Qwen3-30B-A3B-tiny/attention.csv"}, // CRLF, true-mixed
		{"frontier-h800", "frontier-h800/Phi-tiny-MoE-instruct/moe_kernel_only.csv"},
		{"vidur-h100", "vidur-h100/network-h100_dgx/send_recv.csv"}, // unnamed index column
	} {
		t.Run(tc.file, func(t *testing.T) {
			d := sharedDataset(t, tc.set)
			src := filepath.Join(root, tc.file)
			byLine := map[int]csvRow{}
			for _, r := range readRef(t, src) {
				byLine[r.line] = r
			}
			n := 0
			for _, s := range d.Samples {
				if s.Source != src {
					continue
				}
				n++
				r, ok := byLine[s.Line]
				if !ok {
					t.Fatalf("sample at line %d: no such CSV record", s.Line)
				}
				cell := func(name string) float64 {
					v, err := strconv.ParseFloat(r.cells[name], 64)
					if err != nil {
						t.Fatalf("line %d %s: %v", s.Line, name, err)
					}
					return v
				}
				p := "time_stats." + s.Key.Op + "."
				for _, c := range []struct {
					name string
					got  float64
				}{{"median", s.MedianMs}, {"mean", s.MeanMs}, {"min", s.MinMs}, {"max", s.MaxMs}, {"std", s.StdMs}} {
					if want := cell(p + c.name); math.Float64bits(c.got) != math.Float64bits(want) {
						t.Fatalf("line %d %s%s: Arrow %v, CSV %v", s.Line, p, c.name, c.got, want)
					}
				}
				if _, ok := r.cells[p+"count"]; ok && float64(s.Count) != cell(p+"count") {
					t.Fatalf("line %d count %d", s.Line, s.Count)
				}
				checkFeatures(t, s, r, cell)
			}
			if n == 0 {
				t.Fatal("no samples from this file")
			}
		})
	}
}

// checkFeatures re-derives a sample's key and features from its CSV row.
func checkFeatures(t *testing.T, s dataset.Sample, r csvRow, cell func(string) float64) {
	t.Helper()
	list := func(name string) []int {
		var out []int
		body := strings.Trim(r.cells[name], "[]")
		for _, e := range strings.Split(body, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(e))
			if err != nil {
				t.Fatalf("line %d %s: %v", s.Line, name, err)
			}
			out = append(out, v)
		}
		return out
	}
	var want []float64
	switch s.Key.Op {
	case spec.OpAttnPrefill:
		switch {
		case r.cells["is_true_mixed_batch"] == "True":
			kv, c := spec.PrefillEquivalent(list("prefill_seq_lens"), list("prefill_kv_cache_sizes"))
			want = []float64{kv, c}
		case r.cells["is_mixed_batch"] == "True":
			seq := list("seq_lens")
			ctx := make([]int, len(seq))
			for i := range ctx {
				ctx[i] = int(cell("kv_cache_size"))
			}
			kv, c := spec.PrefillEquivalent(seq, ctx)
			want = []float64{kv, c}
		default:
			want = []float64{cell("kv_cache_size"), cell("prefill_chunk_size")}
		}
	case spec.OpAttnDecode:
		if r.cells["is_true_mixed_batch"] == "True" {
			b, kv := spec.DecodeEquivalent(list("decode_kv_cache_sizes"))
			want = []float64{b, kv}
		} else {
			want = []float64{cell("batch_size"), cell("kv_cache_size")}
		}
	case spec.OpAttnInputReshape, spec.OpAttnKVCacheSave, spec.OpAttnOutputReshape:
		want = []float64{cell("total_tokens")}
	case spec.OpMoEGroupedGEMM:
		want = []float64{cell("total_routed_tokens"), math.Round(cell("tokens_per_expert_avg") * cell("max_load_ratio"))}
		if s.Key.EP != int(cell("expert_parallel_size")) || s.Key.LocalExperts != int(cell("num_experts_per_device")) || s.Key.RoutingPath != r.cells["routing_runtime_path"] {
			t.Fatalf("line %d key %v", s.Line, s.Key)
		}
	case spec.OpMoEGatingLinear, spec.OpMoERoutingTopK:
		want = []float64{cell("num_tokens")}
		if s.Key.GatingContext != r.cells["gating_runtime_context"] || s.Key.RoutingPath != r.cells["routing_runtime_path"] || s.Key.EP != 0 {
			t.Fatalf("line %d key %v", s.Line, s.Key)
		}
	case spec.OpSendRecv, spec.OpAllReduce:
		want = []float64{cell("size")}
		if s.Key.Workers != int(cell("num_workers")) {
			t.Fatalf("line %d key %v", s.Line, s.Key)
		}
	default:
		want = []float64{cell("num_tokens")}
	}
	if len(s.Features) != len(want) {
		t.Fatalf("line %d %s: features %v, want %v", s.Line, s.Key.Op, s.Features, want)
	}
	for i := range want {
		if s.Features[i] != want[i] {
			t.Fatalf("line %d %s: features %v, want %v", s.Line, s.Key.Op, s.Features, want)
		}
	}
}

// TestKeysAndMeasurementContract checks the key derivations the simulator
// relies on and that measurement types never mix.
func TestKeysAndMeasurementContract(t *testing.T) {
	h800 := sharedDataset(t, "frontier-h800")
	for _, f := range h800.Manifest.Files {
		if !strings.Contains(f.Name, f.Measurement) {
			t.Errorf("file %s holds %s", f.Name, f.Measurement)
		}
	}
	ctx := map[string]int{}
	for _, s := range h800.Samples {
		if s.Device != "h800" || s.Model == "" {
			t.Fatalf("sample %v: device %q model %q", s.Key, s.Device, s.Model)
		}
		isKO := strings.Contains(s.Source, "_kernel_only")
		if (s.Key.Measurement == spec.KernelOnly) != isKO {
			t.Fatalf("%s:%d measured %s", s.Source, s.Line, s.Key.Measurement)
		}
		if s.Key.Op == spec.OpMoEGatingLinear {
			ctx[s.Key.GatingContext]++
		}
		if s.Key.Op == spec.OpMoEShuffling && (s.Key.EP == 0 || s.Key.LocalExperts == 0 || s.Key.GatingContext != "") {
			t.Fatalf("shuffling key %v", s.Key)
		}
	}
	// prefill_hot and standalone_legacy are separate predictors, half each.
	if ctx[spec.GatingPrefillHot] == 0 || ctx[spec.GatingPrefillHot] != ctx[spec.GatingStandalone] {
		t.Errorf("gating contexts %v", ctx)
	}
	models := strings.Join(h800.Manifest.Models, ",")
	if models != "llama-2-7b,phi-tiny-moe,qwen3-30b-a3b-tiny" || h800.Manifest.Model != "" {
		t.Errorf("models %q model %q", models, h800.Manifest.Model)
	}

	vidur := sharedDataset(t, "vidur-h100")
	// Vidur's mlp.csv holds kernel times (its profiler sums the kernels
	// under each operator's range): KERNEL_ONLY, saying why; its network
	// files are CUDA_EVENT.
	for _, in := range vidur.Manifest.Inputs {
		want, why := spec.CUDAEvent, "legacy"
		if strings.HasSuffix(in.Path, "mlp.csv") {
			want, why = spec.KernelOnly, "Vidur's mlp.csv"
		}
		if !in.MeasurementDefaulted || in.Measurement != want || !strings.Contains(in.MeasurementNote, why) {
			t.Errorf("%s: measurement %s defaulted %v note %q; want %s, %q", in.Path, in.Measurement, in.MeasurementDefaulted, in.MeasurementNote, want, why)
		}
	}
	for _, s := range vidur.Samples {
		switch s.Key.Op {
		case spec.OpAllReduce:
			if s.Key.TP != s.Key.Workers || s.Model != "" {
				t.Fatalf("all_reduce key %v model %q", s.Key, s.Model)
			}
		case spec.OpSendRecv:
			if s.Key.TP != 1 || s.Key.Workers != 2 {
				t.Fatalf("send_recv key %v", s.Key)
			}
		default:
			if s.Model != "llama-2-7b" {
				t.Fatalf("%v model %q", s.Key, s.Model)
			}
		}
	}
	if vidur.Manifest.Model != "llama-2-7b" {
		t.Errorf("model %q", vidur.Manifest.Model)
	}

	byKey := h800.ByKey()
	k := spec.OpKey{Op: spec.OpAttnDecode, Measurement: spec.CUDAEvent, TP: 2}
	if n := len(byKey[k]); n == 0 {
		t.Errorf("ByKey has no %v", k)
	}
	for key, ss := range byKey {
		for _, s := range ss {
			if s.Key != key {
				t.Fatalf("ByKey[%v] holds %v", key, s.Key)
			}
		}
	}
}

// TestDeterministicOutput ingests the same inputs twice: the files are
// byte-identical, and the checksum is stable.
func TestDeterministicOutput(t *testing.T) {
	src := filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny")
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	ma, err := Ingest([]string{src}, a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mb, err := Ingest([]string{src}, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ma.Checksum() != mb.Checksum() {
		t.Error("checksums differ")
	}
	for _, f := range append(ma.Files, dataset.OutputFile{Name: dataset.ManifestFile}) {
		x, _ := os.ReadFile(filepath.Join(a, f.Name))
		y, _ := os.ReadFile(filepath.Join(b, f.Name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs (%d vs %d bytes)", f.Name, len(x), len(y))
		}
	}
	d, err := dataset.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if d.Checksum() != ma.Checksum() {
		t.Error("loaded checksum differs")
	}
}

// TestRewriteReplacesDataset re-ingests into an existing dataset folder:
// files the new dataset lacks are removed; a folder of other things is
// refused; a tampered file fails Load.
func TestRewriteReplacesDataset(t *testing.T) {
	root := filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny")
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := Ingest([]string{root}, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "moe.KERNEL_ONLY.arrow")); err != nil {
		t.Fatal(err)
	}
	m, err := Ingest([]string{filepath.Join(root, "moe.csv")}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "manifest.json,moe.CUDA_EVENT.arrow" || len(m.Files) != 1 {
		t.Errorf("after re-ingest: %v", names)
	}

	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Ingest([]string{root}, other, Options{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("wrote into a foreign folder: %v", err)
	}

	f := filepath.Join(dir, "moe.CUDA_EVENT.arrow")
	data, _ := os.ReadFile(f)
	data[len(data)/2] ^= 1
	os.WriteFile(f, data, 0o644)
	if _, err := dataset.Load(dir); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("Load of a tampered file: %v", err)
	}
	os.Remove(filepath.Join(dir, dataset.ManifestFile))
	if _, err := dataset.Load(dir); err == nil || !strings.Contains(err.Error(), "no manifest.json") {
		t.Errorf("Load without manifest: %v", err)
	}
}

// TestLegacyMoEAndCPUOverhead reads the two formats that have no example
// under testdata: the legacy MoE dialect and the CPU overhead table.
func TestLegacyMoEAndCPUOverhead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	m, err := Ingest([]string{"testdata/legacy-a100"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := m.Inputs[0]
	if m.Device != "a100" || in.Model != "mixtral-8x7b" || in.Family != "moe" || in.Dialect != dialectLegacyMoE || !in.MeasurementDefaulted {
		t.Errorf("legacy MoE input %+v", in)
	}
	renamed := map[string]string{}
	for _, r := range in.Renamed {
		renamed[r.From] = r.To
	}
	if renamed["moe_gating"] != spec.OpMoEGatingLinear || renamed["moe_expert_up_proj"] != spec.OpMoEGroupedGEMM || renamed["moe_expert_down_proj"] != spec.OpMoEGroupedGEMM {
		t.Errorf("renames %v", renamed)
	}
	d, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := readRef(t, "testdata/legacy-a100/mixtral_8x7b_moe/moe.csv")
	byLine := map[int]csvRow{}
	for _, r := range rows {
		byLine[r.line] = r
	}
	n := 0
	for _, s := range d.Samples {
		r := byLine[s.Line]
		f := func(c string) float64 { v, _ := strconv.ParseFloat(r.cells[c], 64); return v }
		switch s.Key.Op {
		case spec.OpMoEGatingLinear:
			if s.Key.GatingContext != spec.GatingStandalone || s.Key.RoutingPath != "standard_fused_topk" || s.MedianMs != f("time_stats.moe_gating.median") {
				t.Errorf("gating %+v", s)
			}
		case spec.OpMoEGroupedGEMM:
			n++
			tokens, ep := f("num_tokens"), f("expert_parallel_size")
			routed := math.Round(tokens * 2 / ep)
			if s.MedianMs != f("time_stats.moe_expert_up_proj.median")+f("time_stats.moe_expert_down_proj.median") ||
				s.Features[0] != routed || s.Features[1] != math.Ceil(routed/f("num_experts_per_device")) || s.Key.EP != int(ep) {
				t.Errorf("grouped gemm %+v", s)
			}
		}
	}
	if n != len(rows) {
		t.Errorf("%d grouped GEMM samples from %d rows", n, len(rows))
	}

	cpuDir := filepath.Join(t.TempDir(), "cpu")
	m, err = Ingest([]string{"testdata/cpu-h100/llama-3.1-8b/cpu_overhead.csv"}, cpuDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err = dataset.Load(cpuDir)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, s := range d.Samples {
		count[s.Key.Op]++
		if s.Key.Measurement != spec.HostWall || s.Model != "llama-3.1-8b" || s.Device != "h100" || !math.IsNaN(s.MinMs) || len(s.Features) != 3 {
			t.Fatalf("cpu sample %+v", s)
		}
	}
	// 8 rows; ray_comm_time is 0 (no Ray) on the 4 TP=1 rows.
	want := map[string]int{spec.OpCPUSchedule: 8, spec.OpCPUSampler: 8, spec.OpCPUPrepareInputs: 8, spec.OpCPUProcessOutputs: 8, spec.OpCPURayComm: 4}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("cpu ops %v, want %v", count, want)
	}
}

// TestDeviceAndModelResolution covers the folder layout, YAML and flags.
func TestDeviceAndModelResolution(t *testing.T) {
	for _, tc := range []struct{ dir, device, model string }{
		{"/data/profiles/frontier-a800-qwen3-30b-a3b", "a800", "qwen3-30b-a3b"},
		{"/data/profiles/frontier-h800/Qwen3-30B-A3B-tiny", "h800", "Qwen3-30B-A3B-tiny"},
		{"/data/profiles/vidur-h100/Llama-2-7b-hf", "h100", "Llama-2-7b-hf"},
		{"/data/profiles/vidur-h100/network-h100_dgx", "h100", ""},
		{"/data/compute/h200/my-model/run1", "h200", "my-model"},
		{"/data/compute/h200/llama-3.1-8b/run1", "h200", "llama-3.1-8b"},
		{"/home/me/profiles", "", ""},
	} {
		dev, model := fromPath(tc.dir)
		if dev != tc.device || model != tc.model {
			t.Errorf("fromPath(%s) = %q, %q; want %q, %q", tc.dir, dev, model, tc.device, tc.model)
		}
	}
	if got := canonicalModel("meta-llama/Llama-3.1-8B-Instruct"); got != "llama-3.1-8b" {
		t.Errorf("canonicalModel = %q", got)
	}

	// YAML beside the files names the device; flags override everything.
	src := filepath.Join(profilesDir(t), "frontier-h800", "llama2_7b_dense_example", "linear_op.csv")
	m, err := Ingest([]string{src}, filepath.Join(t.TempDir(), "a"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Inputs[0]; in.Device != "h800" || !strings.HasSuffix(in.DeviceFrom, ".yaml") || in.Model != "llama-2-7b" || in.ModelFrom != "path" {
		t.Errorf("yaml resolution: %+v", in)
	}
	m, err = Ingest([]string{src}, filepath.Join(t.TempDir(), "b"), Options{Device: "H100-SXM", Model: "Llama-3.1-8B"})
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Inputs[0]; in.Device != "h100" || in.Model != "llama-3.1-8b" || in.DeviceFrom != "flag --device" {
		t.Errorf("flag resolution: %+v", in)
	}

	// Two devices in one run is an error unless --device says otherwise.
	root := profilesDir(t)
	two := []string{filepath.Join(root, "vidur-h100", "Llama-2-7b-hf"), filepath.Join(root, "frontier-a800-qwen3-30b-a3b", "linear_op.csv")}
	if _, err := Ingest(two, filepath.Join(t.TempDir(), "c"), Options{}); err == nil || !strings.Contains(err.Error(), "several devices") {
		t.Errorf("two devices: %v", err)
	}
}

// TestCollectShards checks ftk-collect.yaml: its device and model are
// used, and shards of one sweep that disagree are refused.
func TestCollectShards(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	shard := func(name, yaml string) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		// Shards measure different shapes: the same bytes in two shards would
		// be one file copied (skipped as identical).
		data := src
		if name != "s1" {
			data = src[:bytes.LastIndexByte(src[:len(src)-1], '\n')+1]
		}
		os.WriteFile(filepath.Join(dir, "linear_op.csv"), data, 0o644)
		os.WriteFile(filepath.Join(dir, CollectFile), []byte(yaml), 0o644)
		return dir
	}
	a := shard("s1", "device: h100\nmodel: qwen3-30b-a3b\nmeasurement: CUDA_EVENT\nbackend: torch\nshard: 1/2\n")
	b := shard("s2", "device: h100\nmodel: qwen3-30b-a3b\nmeasurement: CUDA_EVENT\nbackend: torch\nshard: 2/2\n")
	m, err := Ingest([]string{a, b}, filepath.Join(root, "ok"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Inputs[1]; in.Device != "h100" || in.Model != "qwen3-30b-a3b" || in.Shard != "2/2" {
		t.Errorf("collect yaml: %+v", in)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"device: h800\nmodel: qwen3-30b-a3b\nmeasurement: CUDA_EVENT\nbackend: torch\nshard: 2/2\n", "disagree on device"},
		{"device: h100\nmodel: qwen3-30b-a3b\nmeasurement: [CUDA_EVENT, KERNEL_ONLY]\nbackend: torch\nshard: 2/2\n", "disagree on measurement"},
		{"device: h100\nmodel: qwen3-30b-a3b\nmeasurement: CUDA_EVENT\nbackend: synthetic\nshard: 2/2\n", "disagree on backend"},
		{"device: h100\nmodel: qwen3-30b-a3b\nmeasurement: CUDA_EVENT\nbackend: torch\nshard: 1/2\n", "appears twice"},
		{"device: h100\nmodel: qwen3-30b-a3b\nmeasurement: CUDA_EVENT\nbackend: torch\nshard: 3/2\n", "not i/n"},
	} {
		c := shard("bad", tc.yaml)
		if _, err := Ingest([]string{a, c}, filepath.Join(t.TempDir(), "x"), Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
	// collect writes collectives one folder down, network/*.csv: the
	// ftk-collect.yaml of the folder above applies.
	net, err := os.ReadFile(filepath.Join(profilesDir(t), "vidur-h100", "network-h100_dgx", "all_reduce.csv"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(a, "network"), 0o755)
	os.WriteFile(filepath.Join(a, "network", "all_reduce.csv"), net, 0o644)
	m, err = Ingest([]string{a}, filepath.Join(root, "net"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in := m.Inputs[1]; in.Family != "collective" || in.Device != "h100" || !strings.HasSuffix(in.DeviceFrom, CollectFile) || in.Shard != "1/2" {
		t.Errorf("network file under a collect folder: %+v", in)
	}

	// A CSV that contradicts the YAML's measurement type.
	c := shard("meas", "device: h100\nmodel: qwen3-30b-a3b\nmeasurement: KERNEL_ONLY\n")
	if _, err := Ingest([]string{c}, filepath.Join(t.TempDir(), "y"), Options{}); err == nil || !strings.Contains(err.Error(), "disagrees with") {
		t.Errorf("measurement vs yaml: %v", err)
	}
}

func TestSummary(t *testing.T) {
	d := sharedDataset(t, "vidur-h100")
	var b bytes.Buffer
	if err := dataset.WriteSummary(&b, "ds", d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"device h100", "all_reduce  ", "size_bytes", "num_tokens", "1,2,4,8"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, s := range d.Summary() {
		if s.Op == spec.OpAllReduce {
			f := s.Features[0]
			if s.Rows != 2982 || f.Name != spec.FeatSizeBytes || f.Min != 2048 || f.Max != 64*1024*1024 || fmt.Sprint(s.TP) != "[2 4 8]" {
				t.Errorf("all_reduce summary %+v", s)
			}
		}
	}
}

// TestMeasurementTypeFlag: Options.Measurement (ingest --measurement-type)
// labels the files that do not say their measurement type, and leaves
// those that do (a measurement_type column) as they say.
func TestMeasurementTypeFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	m, err := Ingest([]string{filepath.Join(profilesDir(t), "vidur-h100", "Llama-2-7b-hf", "mlp.csv"), filepath.Join(profilesDir(t), "frontier-h800")}, dir,
		Options{Device: "h100", Measurement: spec.CUDAEvent})
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, in := range m.Inputs {
		switch {
		case strings.HasSuffix(in.Path, "mlp.csv"):
			if in.Measurement != spec.CUDAEvent || !strings.Contains(in.MeasurementNote, "--measurement-type") {
				t.Errorf("%s: %s, note %q; want CUDA_EVENT from the flag", in.Path, in.Measurement, in.MeasurementNote)
			}
		case !in.MeasurementDefaulted && in.Measurement == spec.KernelOnly:
			said++ // a file whose rows say KERNEL_ONLY keeps it
		}
	}
	if said == 0 {
		t.Error("no input kept the KERNEL_ONLY its measurement_type column says")
	}
}
