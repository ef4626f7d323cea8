package collect

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftk-dev/ftk/spec"
)

// torchLimits keep CPU torch sweeps to seconds.
var torchLimits = spec.EngineLimits{MaxNumBatchedTokens: 8, MaxNumSeqs: 2, MaxModelLen: 8, BlockSize: spec.DefaultBlockSize}

// needTorch returns a Python with torch. These tests measure the real
// worker code and fail without it: CI installs Debian's python3-torch.
func needTorch(t *testing.T) string {
	t.Helper()
	py, _, err := FindPython(context.Background(), "")
	if err != nil {
		t.Fatalf("the torch worker tests need PyTorch: %v", err)
	}
	return py
}

// The torch worker on the CPU measures every family and writes rows in
// the same formats as a GPU run, labelled CPU. The layout is data parallel
// (TP2 x DP2, EP4), so the EP exchange is measured, as vLLM's default
// allgather_reducescatter backend runs it: an all-gather to dispatch, a
// reduce-scatter to combine (gloo has none: the all-reduce it is cut from),
// each row's impl saying which.
func TestTorchWorkerCPUSweep(t *testing.T) {
	t.Parallel() // the torch tests mostly wait on worker start-up
	py := needTorch(t)
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), torchLimits, []spec.Layout{{TP: 2, EP: 4, DP: 2}})
	o := Options{Plan: c, Out: dir, Backend: BackendTorch, Warmup: 1, Repeats: 2,
		Torch: TorchOptions{DeviceKind: KindCPU, Python: py, Threads: 1, Kernels: KernelsEager}}
	var log strings.Builder
	o.Log = &log
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	p, _ := NewPlan(c)
	if sum.Failed != 0 || sum.Measured != len(p.Shapes) {
		t.Fatalf("summary %+v, plan %d shapes\n%s", sum, len(p.Shapes), log.String())
	}
	sweep := SweepDir(dir, deviceCPU, "tiny-moe", Shard{})
	files := csvFiles(t, sweep)
	for _, want := range []string{"linear_op_cpu.csv", "attention_cpu.csv", "moe_cpu.csv", "network/all_reduce_cpu.csv",
		"network/ep_dispatch_cpu.csv", "network/ep_combine_cpu.csv", "cpu_overhead.csv", "cpu_overhead_cpu.csv"} {
		if !slices.Contains(files, want) {
			t.Errorf("no %s among %v", want, files)
		}
	}
	for _, f := range files {
		h, rows := readCSV(t, filepath.Join(sweep, f))
		if len(rows) == 0 {
			t.Errorf("%s: no rows", f)
			continue
		}
		wantType := spec.CPUTime
		if f == "cpu_overhead.csv" {
			wantType = spec.HostWall
		}
		for i, r := range rows {
			if r[slices.Index(h, "measurement_type")] != wantType || r[slices.Index(h, "profiling_backend")] != BackendTorch {
				t.Fatalf("%s row %d: measurement %s backend %s", f, i+1, r[slices.Index(h, "measurement_type")], r[slices.Index(h, "profiling_backend")])
			}
			impl := r[slices.Index(h, "impl")]
			if impl == "" || strings.Contains(impl, "synthetic") {
				t.Fatalf("%s row %d: impl %q", f, i+1, impl)
			}
			// Every operator names its kernel: on a CPU (--kernels eager)
			// plain PyTorch, or the call vLLM makes where ftk makes the
			// same one (F.linear, F.embedding, views).
			ks := r[slices.Index(h, "kernel_source")]
			if ks == "" || spec.KernelOrigin(ks) == spec.KernelOriginRoofline || strings.Contains(ks, "vllm") {
				t.Fatalf("%s row %d: kernel_source %q", f, i+1, ks)
			}
			if want := map[string]string{"network/ep_dispatch_cpu.csv": "gloo_all_gather", "network/ep_combine_cpu.csv": "gloo_all_reduce"}[f]; want != "" && impl != want {
				t.Fatalf("%s row %d: impl %q, want %q", f, i+1, impl, want)
			}
		}
	}
	h, rows := readCSV(t, filepath.Join(sweep, "linear_op_cpu.csv"))
	for _, v := range column(t, h, rows, "time_stats.attn_pre_proj.median") {
		if v == "" || v == "0" {
			t.Errorf("attn_pre_proj median %q: want a positive CPU time", v)
		}
	}
	// Host issue costs timed on the CPU: labelled CPU, no CUDA graph to
	// replay, and a whole decoder layer costs more than one dispatcher call.
	h, rows = readCSV(t, filepath.Join(sweep, "cpu_overhead_cpu.csv"))
	num := func(col string) float64 {
		v, err := strconv.ParseFloat(column(t, h, rows, col)[0], 64)
		if err != nil {
			t.Fatalf("%s: %v", col, err)
		}
		return v
	}
	if len(rows) != 1 || column(t, h, rows, "issue_graph_median")[0] != "" {
		t.Errorf("cpu_overhead_cpu.csv: %d rows, issue_graph %q: want one row, no graph replay on a CPU", len(rows), column(t, h, rows, "issue_graph_median")[0])
	}
	if call, aten, layer := num("issue_call_median"), num("issue_aten_median"), num("issue_layer_median"); !(call > 0 && aten > 0 && layer > 5*call) {
		t.Errorf("issue costs: call %g ms, aten %g ms, layer %g ms", call, aten, layer)
	}
	meta, err := readMeta(sweep)
	if err != nil || meta.Synthetic || meta.Environment["torch"] == "" || meta.Environment["kernels"] != KernelsEager || meta.Environment["kernel_only_timing"] != "profiler" || meta.Precision != "FP32" || meta.Device != deviceCPU {
		t.Errorf("yaml: %+v %v", meta, err)
	}
}

func TestKillAndResumeTorchCPU(t *testing.T) {
	t.Parallel()
	py := needTorch(t)
	killMidway(t, helperConfig{Out: t.TempDir(), Backend: BackendTorch, Python: py, DelayMs: 100,
		Families: []spec.Family{spec.FamilyLinear, spec.FamilyCPU}}, 4)
}

// A worker that dies or hangs is killed and started again on the next
// request.
func TestTorchWorkerRestarts(t *testing.T) {
	t.Parallel()
	py := needTorch(t)
	b, err := newTorchBackend(py, "cpu", 1, nil, nil, "worker 0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := tinyMoE(t)
	p, err := NewPlan(planConfig(m, torchLimits, []spec.Layout{{TP: 1}}, spec.FamilyLinear))
	if err != nil {
		t.Fatal(err)
	}
	s := &p.Shapes[0]
	req := newRequest(m, s, s.Op(spec.OpAttnPreProj), spec.DefaultBlockSize, spec.CPUTime, 0, 2)
	ctx := context.Background()
	if _, err := b.Measure(ctx, req); err != nil {
		t.Fatal(err)
	}
	first := b.p.cmd.Process.Pid
	// A request that outlives its deadline: the worker is killed.
	slow := *req
	slow.Shape.K, slow.Shape.N, slow.Shape.Tokens, slow.Repeats = 2048, 2048, 2048, 10000
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := b.Measure(tctx, &slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung request: %v", err)
	}
	if b.p != nil {
		t.Fatal("the hung worker is still attached")
	}
	// The next request starts a new worker.
	resp, err := b.Measure(ctx, req)
	if err != nil || !resp.OK || b.p.cmd.Process.Pid == first {
		t.Fatalf("after a hang: %+v, %v", resp, err)
	}
	// A worker that dies between requests: the next request says so.
	b.p.cmd.Process.Kill()
	if _, err := b.Measure(ctx, req); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("request to a dead worker: %v", err)
	}
	if b.p != nil {
		t.Fatal("the dead worker is still attached")
	}
}

// With vLLM importable (here the test double of its op signatures in
// worker/testdata/fakevllm, not vLLM) the sweep's rows name vLLM's kernels
// operator by operator, and ftk-collect.yaml records the kernels mode and
// vLLM's version.
func TestTorchWorkerCallsVLLMKernels(t *testing.T) {
	py := needTorch(t)
	fake, err := filepath.Abs(filepath.Join("worker", "testdata", "fakevllm"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", fake)
	dir := t.TempDir()
	c := planConfig(tinyMoE(t), torchLimits, []spec.Layout{{TP: 1}}, spec.FamilyLinear, spec.FamilyAttention, spec.FamilyMoE)
	o := Options{Plan: c, Out: dir, Backend: BackendTorch, Warmup: 1, Repeats: 2,
		Torch: TorchOptions{DeviceKind: KindCPU, Python: py, Threads: 1, Kernels: KernelsVLLM}}
	var log strings.Builder
	o.Log = &log
	if sum, err := Run(context.Background(), o); err != nil || sum.Failed != 0 {
		t.Fatalf("%+v %v\n%s", sum, err, log.String())
	}
	sweep := SweepDir(dir, deviceCPU, "tiny-moe", Shard{})
	want := map[string][]string{
		"linear_op_cpu.csv": {"input_layernorm=vllm._C.fused_add_rms_norm", "attn_rope=vllm._C.rotary_embedding",
			"attn_pre_proj=torch.nn.functional.linear+vllm._C.rms_norm"},
		"attention_cpu.csv": {"attn_kv_cache_save=vllm._C_cache_ops.reshape_and_cache_flash", "vllm_flash_attn_fa3"},
		"moe_cpu.csv":       {"moe_grouped_gemm=vllm.fused_experts", "moe_gating_routing_topk=vllm.fused_topk", "moe_shuffling=vllm.moe_align_block_size"},
	}
	for f, subs := range want {
		h, rows := readCSV(t, filepath.Join(sweep, f))
		cells := strings.Join(column(t, h, rows, "kernel_source"), "\n")
		for _, s := range subs {
			if !strings.Contains(cells, s) {
				t.Errorf("%s: no kernel_source names %q:\n%s", f, s, cells)
			}
		}
	}
	meta, err := readMeta(sweep)
	if err != nil || meta.Environment["kernels"] != KernelsVLLM || !strings.Contains(meta.Environment["vllm_version"], "test.double") ||
		meta.Environment["vllm_ops_missing"] != "[]" {
		t.Errorf("yaml environment %v (%v)", meta.Environment, err)
	}
}
