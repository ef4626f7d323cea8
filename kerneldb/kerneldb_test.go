package kerneldb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testDB = "../testdata/aiconfigurator"

// One known row of each table family, as AIConfigurator's H100 SXM
// database (vLLM 0.14.0) holds it: ReadTable must find it with its
// device, version, dtype, kernel source and latency.
func TestKnownRowOfEachTable(t *testing.T) {
	dir := filepath.Join(testDB, "h100_sxm")
	const dev = "NVIDIA H100 80GB HBM3"
	for _, tc := range []struct {
		file   string
		rows   int
		source string
		ms     float64
		match  func(t *Table) (Row, bool)
	}{
		{"gemm/vllm/0.14.0/gemm_perf.parquet", 26040, "vllm_default", 7.856960720486111, func(t *Table) (Row, bool) {
			for _, r := range t.GEMM {
				if r.Dtype == "fp8" && r.M == 8192 && r.N == 65536 && r.K == 10240 {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
		{"attention/vllm/0.14.0/context_attention_perf.parquet", 10914, "vllm_flash_attn", 60.649454752604164, func(t *Table) (Row, bool) {
			for _, r := range t.Attention {
				if r.Context && r.Batch == 8 && r.ISL == 16384 && r.Heads == 64 && r.KVHeads == 1 && r.HeadDim == 128 && r.KVCacheDtype == "bfloat16" {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
		{"attention/vllm/0.14.0/generation_attention_perf.parquet", 10870, "vllm_flash_attn", 0.012175999581813812, func(t *Table) (Row, bool) {
			for _, r := range t.Attention {
				if !r.Context && r.Batch == 32 && r.KVLen() == 2 && r.Heads == 64 && r.KVHeads == 1 && r.KVCacheDtype == "bfloat16" {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
		{"moe/vllm/0.14.0/moe_perf.parquet", 37762, "vllm_fused_moe", 0.31613866488138836, func(t *Table) (Row, bool) {
			for _, r := range t.MoE {
				if r.Dtype == "bfloat16" && r.NumTokens == 1 && r.Hidden == 4096 && r.InterSize == 14336 && r.TopK == 2 && r.Experts == 8 && r.MoETP == 1 && r.MoEEP == 1 && r.Distribution == "balanced" {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
		{"comm/vllm/0.14.0/custom_allreduce_perf.parquet", 138, "vLLM_custom_graph", 0.0042835199832916265, func(t *Table) (Row, bool) {
			for _, r := range t.AllReduce {
				if r.Graph && r.GPUs == 2 && r.MessageSize == 128 {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
		{"mla/vllm/0.14.0/context_mla_perf.parquet", 3165, "vllm_flash_attn_mla", 0.18353599309921265, func(t *Table) (Row, bool) {
			for _, r := range t.MLA {
				if r.Context && r.Heads == 32 && r.Batch == 1 && r.ISL == 1 && r.TP == 4 && r.KVCacheDtype == "bfloat16" && r.KernelSource == "vllm_flash_attn_mla" {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
		{"mla/vllm/0.14.0/generation_mla_perf.parquet", 5430, "vllm_flash_attn_mla", 0.11082667112350464, func(t *Table) (Row, bool) {
			for _, r := range t.MLA {
				if !r.Context && r.Heads == 128 && r.Batch == 1 && r.ISL == 1 && r.TP == 1 && r.Step == 1 && r.KVCacheDtype == "bfloat16" {
					return r.Row, true
				}
			}
			return Row{}, false
		}},
	} {
		tbl, err := ReadTable(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if tbl.Rows != tc.rows {
			t.Errorf("%s: %d rows, want %d", tc.file, tbl.Rows, tc.rows)
		}
		r, ok := tc.match(tbl)
		if !ok {
			t.Errorf("%s: the known row is missing", tc.file)
			continue
		}
		if r.Device != dev || r.Version != "0.14.0" || r.KernelSource != tc.source || r.LatencyMs != tc.ms {
			t.Errorf("%s: row %+v, want device %s, version 0.14.0, kernel %s, %v ms", tc.file, r, dev, tc.source, tc.ms)
		}
	}
}

// Lookups at measured shapes return the measured time exactly; between
// them they interpolate; past them they follow the stated rule.
func TestLookups(t *testing.T) {
	db, err := Open(filepath.Join(testDB, "h100_sxm"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := Load(db, "0.14.0")
	if err != nil {
		t.Fatal(err)
	}
	if ms, fit := k.GEMM("fp8", 8192, 65536, 10240); ms != 7.856960720486111 || fit != Exact {
		t.Errorf("GEMM at a measured shape: %v ms (%s), want 7.85696 exact", ms, fit)
	}
	lo, _ := k.GEMM("bfloat16", 1024, 4096, 4096)
	hi, _ := k.GEMM("bfloat16", 2048, 4096, 4096)
	mid, fit := k.GEMM("bfloat16", 1536, 4096, 4096)
	if fit != Interpolated || mid <= lo || mid >= hi {
		t.Errorf("GEMM between M=1024 (%v) and 2048 (%v): %v (%s)", lo, hi, mid, fit)
	}
	// Past the largest M: proportional to M.
	top, _ := k.GEMM("bfloat16", 8192, 4096, 4096)
	if x, fit := k.GEMM("bfloat16", 16384, 4096, 4096); fit != Extrapolated || x != 2*top {
		t.Errorf("GEMM at twice the largest M: %v (%s), want %v extrapolated", x, fit, 2*top)
	}
	// An N between measured ones (qkv of a GQA model) is scaled, bounded
	// by its neighbours' times.
	a, _ := k.GEMM("bfloat16", 512, 4096, 2048)
	b, _ := k.GEMM("bfloat16", 512, 5120, 2048)
	if x, fit := k.GEMM("bfloat16", 512, 4608, 2048); fit != Scaled || x < a || x > b {
		t.Errorf("GEMM at N=4608: %v (%s), want within [%v, %v], scaled", x, fit, a, b)
	}
	if _, fit := k.GEMM("nvfp4", 512, 4096, 4096); fit != Uncovered {
		t.Errorf("GEMM of a dtype the tables lack: %s, want uncovered", fit)
	}
	if ms, fit := k.ContextAttention("bfloat16", 64, 1, 128, 8, 16384); ms != 60.649454752604164 || fit != Exact {
		t.Errorf("context attention at a measured shape: %v (%s)", ms, fit)
	}
	if ms, fit := k.GenerationAttention("bfloat16", 64, 1, 128, 32, 2); ms != 0.012175999581813812 || fit != Exact {
		t.Errorf("generation attention at a measured shape: %v (%s)", ms, fit)
	}
	if ms, fit := k.MoE("bfloat16", "balanced", 4096, 14336, 2, 8, 1, 1, 1); ms != 0.31613866488138836 || fit != Exact {
		t.Errorf("MoE at a measured shape: %v (%s)", ms, fit)
	}
	if ms, fit := k.MLAGeneration("bfloat16", 128, 1, 2); ms != 0.11082667112350464 || fit != Exact {
		t.Errorf("MLA generation at a measured shape: %v (%s)", ms, fit)
	}
	if ms, fit := k.MLAContext("bfloat16", 48, 1, 1024); fit != Scaled || !(ms > 0) {
		t.Errorf("MLA context at 48 heads (not measured): %v (%s), want scaled from a measured head count", ms, fit)
	}
	if ms, fit := k.AllReduce(2, 256); ms != 0.0042835199832916265 || fit != Exact {
		t.Errorf("all-reduce of 128 bf16 elements on 2 GPUs: %v (%s)", ms, fit)
	}
	if _, fit := k.AllReduce(3, 256); fit != Uncovered {
		t.Errorf("all-reduce on 3 GPUs: %s, want uncovered", fit)
	}
	for _, table := range []string{TableGEMM + "/bfloat16", TableMoE + "/fp8", TableContextAttention, TableAllReduce} {
		if k.Sources[table] == "" {
			t.Errorf("no kernel source recorded for %s", table)
		}
	}
}

// A version folder borrowing a table (reuse.yaml) resolves to the folder
// it names; a version between folders takes the newest older one; one
// older than every folder takes the oldest, and says so.
func TestResolve(t *testing.T) {
	db, err := Open(filepath.Join(testDB, "a100_sxm"))
	if err != nil {
		t.Fatal(err)
	}
	if db.System == nil || db.System.SMVersion != 80 {
		t.Errorf("system YAML: %+v, want sm_version 80", db.System)
	}
	for _, tc := range []struct {
		v, folder, measured string
		note                bool
	}{
		{"0.22.0", "0.22.0", "0.14.0", true},
		{"0.14.0", "0.14.0", "0.14.0", false},
		{"0.16.1", "0.14.0", "0.14.0", true},
		{"0.24.0", "0.22.0", "0.14.0", true},
		{"0.10.0", "0.14.0", "0.14.0", true},
		{"", "0.22.0", "0.14.0", true},
	} {
		r, err := db.Resolve(TableGEMM, tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if r.Folder != tc.folder || r.Measured != tc.measured || (r.Note != "") != tc.note {
			t.Errorf("Resolve(gemm_perf, %q) = folder %s measured %s note %q; want %s, %s, note %v", tc.v, r.Folder, r.Measured, r.Note, tc.folder, tc.measured, tc.note)
		}
		if !strings.HasSuffix(r.Path, filepath.Join("0.14.0", "gemm_perf.parquet")) {
			t.Errorf("Resolve(gemm_perf, %q): path %s", tc.v, r.Path)
		}
	}
	if _, err := db.Resolve("kda_perf", "0.14.0"); err == nil {
		t.Error("a table the database lacks resolved")
	}
}

// A bad file is an error naming the file, the row and the column.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gemm_perf.parquet")
	if err := os.WriteFile(p, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTable(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a file that is not parquet: %v", err)
	}
	writeBadGEMM(t, p)
	_, err := ReadTable(p)
	if err == nil || !strings.Contains(err.Error(), p+": row 1, column latency") {
		t.Errorf("a negative latency: %v, want the file, row 1 and column latency named", err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("a folder without the database layout opened")
	}
}

// Optional: every table of the full databases outside the repository
// (FTK_AICONFIGURATOR=<folder holding h100_sxm, b200_sxm, ...>) reads.
func TestFullDatabases(t *testing.T) {
	root := os.Getenv("FTK_AICONFIGURATOR")
	if root == "" {
		t.Skip("set FTK_AICONFIGURATOR to the aiconfigurator folder of ../shared/profiles to read the full databases")
	}
	for _, gpu := range []string{"h100_sxm", "b200_sxm", "a100_sxm", "l40s"} {
		db, err := Open(filepath.Join(root, gpu))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range db.Entries {
			if _, ok := Priced(e.Table); !ok || e.Path == "" {
				continue
			}
			tbl, err := ReadTable(e.Path)
			if err != nil {
				t.Fatal(err)
			}
			n += tbl.Rows
		}
		t.Logf("%s: %d rows in the tables ftk prices", gpu, n)
	}
}
