#!/usr/bin/env python3
"""ftk collect's torch worker: builds one operator per request with PyTorch,
times it and answers with summary statistics. Protocol: README.md beside
this file (line-delimited JSON on stdin/stdout; the first output line is a
hello). ftk starts one worker per GPU (or one on the CPU) and restarts it if
it dies or hangs."""

import argparse
import collections
import json
import math
import os
import pickle
import platform
import statistics
import sys
import tempfile
import time
import traceback

PROTOCOL = 1

GEMM_OPS = {
    "attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj",
    "share_expert_up_proj", "share_expert_down_proj", "lm_head_linear", "moe_gating_linear",
}
NORM_OPS = {"input_layernorm", "post_attention_layernorm"}
ACT_OPS = {"mlp_act", "share_expert_act"}
HOST_OPS = {"cpu_schedule", "cpu_prepare_inputs", "cpu_sampler", "cpu_process_outputs", "cpu_ray_comm"}
# Host issue costs (timing "issue"): per kernel kind, per module call, per
# dispatcher call, per CUDA graph replay and per decoder layer.
ISSUE_OPS = {"issue_call", "issue_module", "issue_aten", "issue_custom", "issue_triton",
             "issue_attention", "issue_collective", "issue_graph", "issue_layer"}
ISSUE_BATCH = 32      # issues per repetition; the time reported is per issue
BUSY_CYCLES = 20000000  # GPU spin kept ahead of the issues (about 10 ms)
COLLECTIVES = {"all_reduce", "send_recv", "ep_dispatch", "ep_combine"}
HOT_PREFIX = 20  # FFN-like GEMMs before a prefill_hot gating op
KERNEL_MODES = ("auto", "vllm", "compiled", "eager")


def log(msg):
    print("ftk-worker: " + msg, file=sys.stderr, flush=True)


def pkg_version(*names):
    try:
        from importlib import metadata
    except ImportError:
        return None
    for n in names:
        try:
            return metadata.version(n)
        except Exception:
            continue
    return None


def kernel_source(op, impl):
    """The kernel_source of a row (docs/formats.md): "torch:<op>" for
    ftk's own PyTorch or Python (not vLLM's kernels), else the name of the
    kernel or call vLLM makes."""
    named = {"flashinfer": "flashinfer", "vllm_fused_moe": "vllm.fused_experts",
             "vllm_C_rms_norm": "vllm._C.rms_norm", "vllm_flash_attn": "vllm.vllm_flash_attn"}
    if impl in named:
        return named[impl]
    if op in COLLECTIVES:
        # torch.distributed over NCCL (gloo on a CPU), not vLLM's own
        # communicators (its custom all-reduce, pynccl).
        return "torch:" + impl
    return "torch:" + op


def summarize(samples):
    return {
        "min": min(samples), "max": max(samples), "mean": statistics.fmean(samples),
        "median": statistics.median(samples), "std": statistics.pstdev(samples), "count": len(samples),
    }


# --- the operators as vLLM's forward_native writes them ------------------
# Without vLLM these run compiled by Inductor (the compiled graph modes)
# or as they stand (eager). Written after vLLM's RMSNorm, SiluAndMul,
# RotaryEmbedding (NeoX) and the KV-cache layout of its FlashAttention
# backend (vllm/model_executor/layers/layernorm.py, activation.py,
# rotary_embedding/base.py); not copied.
EPS = 1e-6


def _fused_add_rms_norm_native(x, residual, weight):
    dtype = x.dtype
    s = x.float() + residual.float()
    residual = s.to(dtype)
    s = s * (s.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()
    return s.to(dtype) * weight, residual


def _rms_norm_native(x, weight):
    xf = x.float()
    return (xf * (xf.pow(2).mean(-1, keepdim=True) + EPS).rsqrt()).to(x.dtype) * weight


def _qk_norm_native(q, k, wq, wk):
    return _rms_norm_native(q, wq), _rms_norm_native(k, wk)


def _silu_and_mul_native(x):
    d = x.shape[-1] // 2
    import torch.nn.functional as F
    return F.silu(x[..., :d]) * x[..., d:]


def _rope_native(positions, q, k, cache):
    """NeoX rotary embedding of q [T, qh*hd] and k [T, kvh*hd] from a
    [max_pos, hd] cache of cos and sin halves."""
    cs = cache.index_select(0, positions)
    half = cs.shape[-1] // 2
    cos, sin = cs[:, None, :half], cs[:, None, half:]

    def rot(t):
        t = t.view(t.shape[0], -1, 2 * half)
        a, b = t[..., :half], t[..., half:]
        import torch
        return torch.cat((a * cos - b * sin, b * cos + a * sin), -1).flatten(1)
    return rot(q), rot(k)


def _kv_cache_write_native(k, v, kc, vc, slots):
    kc.view(-1, kc.shape[-2], kc.shape[-1]).index_copy_(0, slots, k)
    vc.view(-1, vc.shape[-2], vc.shape[-1]).index_copy_(0, slots, v)


def _softmax_topk_native(logits, k):
    import torch
    p = torch.softmax(logits, -1)
    w, ids = torch.topk(p, k, -1)
    return w / w.sum(-1, keepdim=True), ids


def _padded_experts(torch, xs, w1, w2, counts):
    """The experts as two batched GEMMs (torch.bmm) over the active
    experts, each expert's tokens padded to the busiest expert's count;
    the gather and scatter indices are built once, outside the timed span."""
    A, h, cmax = len(counts), xs.shape[1], max(counts)
    pos = torch.cat([torch.arange(c, device=xs.device) + e * cmax for e, c in enumerate(counts)])
    buf = torch.zeros(A * cmax, h, device=xs.device, dtype=xs.dtype)

    def fn():
        buf.index_copy_(0, pos, xs)
        h1 = torch.bmm(buf.view(A, cmax, h), w1)
        h2 = torch.bmm(_silu_and_mul_native(h1), w2)
        return h2.view(A * cmax, -1).index_select(0, pos)
    return fn


class Built:
    """An operator ready to time (see Worker.build)."""
    __slots__ = ("fn", "pre", "impl", "source", "cold")

    def __init__(self, fn, pre, impl, source, cold):
        self.fn, self.pre, self.impl, self.source, self.cold = fn, pre, impl, source, cold


# vLLM's operators the worker calls, where each lives (vLLM's source:
# vllm/_custom_ops.py wraps the torch.ops._C / _C_cache_ops kernels;
# SiluAndMul.forward_cuda calls torch.ops._C.silu_and_mul directly).
VLLM_CUSTOM_OPS = ("rms_norm", "fused_add_rms_norm", "rotary_embedding", "reshape_and_cache_flash",
                   "scaled_fp8_quant", "cutlass_scaled_mm")


class VLLMOps:
    """vLLM's kernels as the engine calls them, looked up once. ops maps
    a name to its callable; names vLLM lacks (renamed or removed) are
    absent, with why."""

    def __init__(self, torch):
        import vllm  # noqa: F401  the caller reports an ImportError
        self.version = getattr(vllm, "__version__", None) or pkg_version("vllm")
        self.ops, self.why = {}, {}
        try:
            import vllm._custom_ops as custom
        except Exception as e:
            custom = None
            for n in VLLM_CUSTOM_OPS:
                self.why[n] = "vllm._custom_ops: %s: %s" % (type(e).__name__, e)
        for n in VLLM_CUSTOM_OPS:
            if custom is not None:
                self._add(n, lambda n=n: getattr(custom, n), "vllm._custom_ops." + n)
        self._add("silu_and_mul", lambda: torch.ops._C.silu_and_mul, "torch.ops._C.silu_and_mul")

        def moe(name):
            import vllm.model_executor.layers.fused_moe as fm
            return getattr(fm, name)
        self._add("fused_experts", lambda: moe("fused_experts"), "vllm.model_executor.layers.fused_moe.fused_experts")
        self._add("fused_topk", lambda: moe("fused_topk"), "vllm.model_executor.layers.fused_moe.fused_topk")

        def align():
            from vllm.model_executor.layers.fused_moe.moe_align_block_size import moe_align_block_size
            return moe_align_block_size
        self._add("moe_align_block_size", align, "vllm.model_executor.layers.fused_moe.moe_align_block_size")

        def fa():
            from vllm.vllm_flash_attn import flash_attn_varlen_func
            return flash_attn_varlen_func
        self._add("flash_attn_varlen_func", fa, "vllm.vllm_flash_attn.flash_attn_varlen_func")

    def _add(self, name, get, where):
        try:
            fn = get()
        except Exception as e:
            self.why.setdefault(name, "%s: %s: %s" % (where, type(e).__name__, e))
            return
        if not callable(fn):
            self.why[name] = where + " is not callable"
            return
        self.ops[name] = fn

    def missing(self):
        return sorted(n for n in self.why if n not in self.ops)

    def fa_version(self):
        """The FlashAttention version vLLM uses on this device
        (get_flash_attn_version; its module moved between releases), None
        when it cannot say (vllm_flash_attn's default then runs)."""
        for mod in ("vllm.attention.utils.fa_utils", "vllm.v1.attention.backends.fa_utils", "vllm.vllm_flash_attn.fa_utils"):
            try:
                import importlib
                return importlib.import_module(mod).get_flash_attn_version()
            except Exception:
                continue
        return None


class Worker:
    def __init__(self, torch, device, threads, kernels="auto"):
        self.torch = torch
        if threads > 0:
            torch.set_num_threads(threads)
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.cuda.set_device(self.device)
        self.dtype = torch.bfloat16 if self.cuda else torch.float32
        self.init_kernels(kernels)
        self.group = None  # collectives: (world size, child processes)
        self.warned = set()
        # Weights are reused across requests (the plan walks token counts
        # of the same operators); least recently used ones go past a budget.
        self.weights = collections.OrderedDict()
        self.weight_budget = (8 if self.cuda else 2) << 30

    def init_kernels(self, kernels):
        """Which kernels the operators run (--kernels): vllm (vLLM's own,
        as the engine calls them), compiled (without vLLM: torch.compile of
        each element-wise op as vLLM writes it, as its compiled graph modes
        fuse them), eager (plain PyTorch, only where asked); auto is vllm
        when vLLM imports, else compiled where torch.compile exists."""
        torch = self.torch
        if kernels not in KERNEL_MODES:
            raise ValueError("--kernels %r: want one of %s" % (kernels, ", ".join(KERNEL_MODES)))
        self.vllm, self.vllm_error = None, None
        if kernels in ("auto", "vllm"):
            try:
                self.vllm = VLLMOps(torch)
            except Exception as e:
                self.vllm_error = "%s: %s" % (type(e).__name__, e)
                if kernels == "vllm":
                    raise RuntimeError("--kernels vllm: vLLM does not import (%s)" % self.vllm_error)
        self.can_compile = hasattr(torch, "compile") and hasattr(torch, "_dynamo")
        if kernels == "compiled" and not self.can_compile:
            raise RuntimeError("--kernels compiled needs torch.compile (PyTorch 2.0+); this is PyTorch %s" % torch.__version__)
        if self.vllm is not None:
            self.mode = "vllm"
        elif kernels in ("auto", "compiled"):
            self.mode = "compiled"
            if not self.can_compile:
                self.mode = "eager"
                log("PyTorch %s has no torch.compile: element-wise ops are timed as plain PyTorch, not as vLLM's "
                    "compiled graph modes fuse them (rows say torch:<op>)" % torch.__version__)
        else:
            self.mode = "eager"
        if self.can_compile:
            dyn = torch._dynamo.config
            dyn.cache_size_limit = max(getattr(dyn, "cache_size_limit", 8), 64)
        self.compiled_fns = {}

    def hello(self):
        t = self.torch
        name = t.cuda.get_device_name(self.device) if self.cuda else (platform.processor() or platform.machine() or "cpu")
        return {
            "hello": "ftk-worker", "protocol": PROTOCOL, "python": platform.python_version(),
            "torch": t.__version__, "device": str(self.device), "device_name": name,
            "cuda": t.version.cuda, "cudnn": t.backends.cudnn.version() if self.cuda else None,
            "flashinfer": pkg_version("flashinfer-python", "flashinfer"), "vllm": pkg_version("vllm"),
            "threads": t.get_num_threads(), "dtype": str(self.dtype).replace("torch.", ""),
            "kernels": self.mode, "vllm_error": self.vllm_error,
            "vllm_ops_missing": self.vllm.missing() if self.vllm else None,
            "vllm_version": self.vllm.version if self.vllm else None,
        }

    def rand(self, *shape, dtype=None):
        """Activations: unit scale, as after a norm (the bits toggled set a
        GPU's power and clocks: N(0, 0.02) inputs ran an H200 GEMM 11%
        faster)."""
        return self.torch.randn(*shape, device=self.device, dtype=dtype or self.dtype)

    def weight(self, *shape):
        """A random weight tensor of this shape, cached between requests."""
        w = self.weights.pop(shape, None)
        if w is None:
            w = self.rand(*shape) * 0.02  # weights: a trained layer's scale
            size = w.numel() * w.element_size()
            total = sum(t.numel() * t.element_size() for t in self.weights.values())
            while self.weights and total + size > self.weight_budget:
                _, old = self.weights.popitem(last=False)
                total -= old.numel() * old.element_size()
        self.weights[shape] = w
        return w

    def warn_once(self, key, msg):
        if key not in self.warned:
            self.warned.add(key)
            log(msg)

    # --- requests -------------------------------------------------------
    def handle(self, req):
        op, sh, timing = req["op"], req["shape"], req["timing"]
        warmup, repeats = int(req.get("warmup", 0)), max(1, int(req.get("repeats", 1)))
        if timing in ("cuda_event", "kernel_only", "cuda_graph") and not self.cuda:
            raise RuntimeError("timing %s needs a CUDA device; this worker runs on %s" % (timing, self.device))
        if op in COLLECTIVES:
            samples, impl = self.collective(op, sh, timing, warmup, repeats)
            source = kernel_source(op, impl)
        elif op in ISSUE_OPS:
            samples, impl = self.issue(op, warmup, repeats)
            source = kernel_source(op, impl)
        else:
            b = self.build(op, sh)
            samples = self.time(b.fn, b.pre, b.cold, timing, warmup, repeats)
            impl, source = b.impl, b.source
        return {"id": req["id"], "ok": True, "stats": summarize(samples), "impl": impl,
                "kernel_source": source,
                "device": str(self.device), "dtype": str(self.dtype).replace("torch.", "")}

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def time(self, fn, pre, cold, timing, warmup, repeats):
        """Times fn. pre runs before every repetition, outside the timed
        span (the prefill_hot prefix); cold synchronises before every
        repetition so launch latency is paid in full (standalone_legacy)."""
        torch = self.torch
        for _ in range(warmup):
            if pre:
                pre()
            fn()
        self.sync()
        if timing == "cuda_event":
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
            for start, end in events:
                if pre:
                    pre()
                elif cold:
                    self.sync()
                start.record()
                fn()
                end.record()
            self.sync()
            return [s.elapsed_time(e) for s, e in events]
        if timing == "kernel_only":
            return self.kernel_times(fn, pre, repeats)
        if timing == "cuda_graph":
            return self.graph_times(fn, pre, repeats)
        out = []
        for _ in range(repeats):
            if pre:
                pre()
            self.sync()
            t0 = time.perf_counter_ns()
            fn()
            self.sync()
            out.append((time.perf_counter_ns() - t0) / 1e6)
        return out

    def graph_times(self, fn, pre, repeats):
        """The op captured once in a CUDA graph (as vLLM's graph modes run
        a step), each repetition one replay between CUDA events: kernel
        time and the gaps inside the graph, no launch cost."""
        torch = self.torch
        cur = torch.cuda.current_stream(self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        cur.wait_stream(side)
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                fn()
        except Exception as e:
            raise RuntimeError("the op cannot be captured in a CUDA graph (%s: %s): time it with cuda_event or kernel_only" % (type(e).__name__, e))
        g.replay()
        self.sync()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in events:
            if pre:
                pre()
            start.record()
            g.replay()
            end.record()
        self.sync()
        return [s.elapsed_time(e) for s, e in events]

    def kernel_times(self, fn, pre, repeats):
        """Sum of GPU kernel durations per repetition, from the profiler:
        each repetition runs inside a record_function range, and a range's
        device time is the kernels its ops launched."""
        from torch.profiler import ProfilerActivity, profile, record_function
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(repeats):
                if pre:
                    pre()
                with record_function("ftk_rep_%d" % i):
                    fn()
            self.sync()
        reps = {}
        for e in prof.events():
            if e.name.startswith("ftk_rep_"):
                t = getattr(e, "device_time_total", None)
                if t is None:
                    t = getattr(e, "cuda_time_total", 0)
                reps[e.name] = t / 1e3  # us -> ms
        if len(reps) == repeats and any(v > 0 for v in reps.values()):
            return [reps["ftk_rep_%d" % i] for i in range(repeats)]
        total = 0.0
        for e in prof.events():
            if getattr(e, "device_type", None) is not None and str(e.device_type).endswith("CUDA"):
                total += getattr(e, "device_time", getattr(e, "cuda_time", 0))
        self.warn_once("kernel_only", "kernel times could not be attributed per repetition: using their mean")
        return [total / 1e3 / repeats] * repeats

    # --- operators --------------------------------------------------------
    # Each builder returns Built(fn, pre, impl, source, cold): fn runs the
    # operator once; source is its kernel_source (docs/formats.md): the
    # vLLM kernel or call ("vllm._C.rms_norm", "torch.nn.functional.linear"),
    # "inductor:<op>" for torch.compile of the op as vLLM writes it, or
    # "torch:<op>" for plain eager PyTorch.
    def build(self, op, sh):
        T = max(1, int(sh.get("tokens", 1)))
        if op in HOST_OPS:
            fn, pre, impl = self.host_op(op, sh)
            return Built(fn, pre, impl, "torch:" + op, False)
        if op in GEMM_OPS:
            return self.gemm(op, sh, T)
        if op in NORM_OPS:
            return self.norm(op, sh, T)
        if op in ACT_OPS:
            return self.act(op, sh, T)
        if op == "add":
            a, b = self.rand(T, int(sh["width"])), self.rand(T, int(sh["width"]))
            return Built(lambda: a + b, None, "torch_plain", "torch:add", False)
        if op == "emb":
            F = self.torch.nn.functional
            table = self.weight(max(1, int(sh["vocab"])), int(sh["width"]))
            ids = self.torch.randint(0, table.shape[0], (T,), device=self.device)
            # vLLM's VocabParallelEmbedding looks rows up with F.embedding.
            return Built(lambda: F.embedding(ids, table), None, "torch_embedding", "torch.nn.functional.embedding", False)
        if op == "attn_rope":
            return self.rope(sh, T)
        if op == "attn_kv_cache_save":
            return self.kv_cache_save(sh, T)
        if op in ("attn_input_reshape", "attn_output_reshape"):
            return self.attn_reshape(op, sh, T)
        if op in ("attn_prefill", "attn_decode"):
            return self.attention(op, sh)
        if op == "moe_gating_routing_topk":
            fn, impl, source = self.routing(sh, T)
            pre, cold = self.gating_context(sh, T)
            return Built(fn, pre, impl, source, cold)
        if op == "moe_shuffling":
            return self.shuffling(sh, T)
        if op == "moe_grouped_gemm":
            return self.grouped_gemm(sh)
        raise ValueError("unknown operator %r" % op)

    def elementwise(self, op, name, native, args):
        """An element-wise op without vLLM: torch.compile (Inductor) of
        native, the op as vLLM's forward_native writes it, in the compiled
        modes; native itself in eager mode or where compiling fails."""
        if self.mode == "eager" or not self.can_compile:
            return Built(lambda: native(*args), None, "torch_plain", "torch:" + name, False)
        fn = self.compiled(name, native)
        try:
            for a in args:
                if hasattr(a, "dim") and a.dim() > 0 and a.shape[0] > 1:
                    self.torch._dynamo.mark_dynamic(a, 0)  # num_tokens is symbolic, as vLLM compiles it
            fn(*args)
        except Exception as e:
            self.warn_once("compile:" + name, "torch.compile of %s failed (%s: %s): timed as plain PyTorch" % (name, type(e).__name__, e))
            return Built(lambda: native(*args), None, "torch_plain", "torch:" + name, False)
        return Built(lambda: fn(*args), None, "torch_compile", "inductor:" + name, False)

    def compiled(self, name, native):
        fn = self.compiled_fns.get(name)
        if fn is None:
            fn = self.compiled_fns[name] = self.torch.compile(native)
        return fn

    def vllm_op(self, name):
        """vLLM's op of that name, or None (not in vllm mode, or missing:
        the hello lists missing ops and each is warned once)."""
        if self.vllm is None:
            return None
        fn = self.vllm.ops.get(name)
        if fn is None:
            self.warn_once("vllm:" + name, "vLLM has no %s (%s): that operator falls back to %s" % (
                name, self.vllm.why.get(name, "missing"), "torch.compile" if self.can_compile and self.mode != "eager" else "plain PyTorch"))
        return fn

    def gemm(self, op, sh, T):
        """A linear layer as vLLM's UnquantizedLinearMethod runs it
        (F.linear on a [n, k] weight); FP8 weights (elem_bytes 1) through
        vLLM's scaled_fp8_quant + cutlass_scaled_mm, else torch._scaled_mm
        on a GPU. Qwen3's Q/K norms are timed inside attn_pre_proj (the
        column's meaning on every backend: docs/formats.md)."""
        torch = self.torch
        F = torch.nn.functional
        k, n = int(sh["k"]), int(sh["n"])
        x, w = self.rand(T, k), self.weight(n, k)
        pre, cold = None, False
        if op == "moe_gating_linear":
            pre, cold = self.gating_context(sh, T)
        fn, impl, source = (lambda: F.linear(x, w)), "torch_linear", "torch.nn.functional.linear"
        if int(sh.get("elem_bytes") or 2) == 1:
            fn, impl, source = self.fp8_gemm(x, w, fn, impl, source)
        if op == "attn_pre_proj" and sh.get("qk_norm"):
            fn, impl, source = self.with_qk_norm(sh, T, fn, impl, source)
        return Built(fn, pre, impl, source, cold)

    def fp8_gemm(self, x, w, fn, impl, source):
        torch = self.torch
        quant, mm = self.vllm_op("scaled_fp8_quant"), self.vllm_op("cutlass_scaled_mm")
        if quant is not None and mm is not None:
            wq, ws = quant(w)
            b = wq.t()  # [k, n], column-major as cutlass_scaled_mm takes it

            def run():
                a, s = quant(x)
                return mm(a, b, s, ws, x.dtype)
            return run, "vllm_cutlass_scaled_mm", "vllm._custom_ops.cutlass_scaled_mm"
        if self.cuda and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
            f8 = torch.float8_e4m3fn
            wq = w.to(f8).t()
            one = torch.ones((), device=self.device, dtype=torch.float32)

            def run():
                return torch._scaled_mm(x.to(f8), wq, scale_a=one, scale_b=one, out_dtype=x.dtype)
            return run, "torch_scaled_mm", "torch._scaled_mm"
        self.warn_once("fp8", "no FP8 GEMM here (vLLM's cutlass_scaled_mm or torch._scaled_mm on a GPU): FP8 linears timed in %s" % self.dtype)
        return fn, impl, source

    def with_qk_norm(self, sh, T, gemm, impl, source):
        """The QKV projection followed by Qwen3's per-head RMSNorms of q and
        k (vLLM: self.q_norm / self.k_norm on [tokens * heads, head_dim])."""
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
        q, k = self.rand(T * qh, hd), self.rand(T * kvh, hd)
        wq, wk = self.rand(hd) * 0.1 + 1, self.rand(hd) * 0.1 + 1
        norm = self.vllm_op("rms_norm")
        if norm is not None:
            oq, ok = self.torch.empty_like(q), self.torch.empty_like(k)

            def run():
                gemm()
                norm(oq, q, wq, EPS)
                norm(ok, k, wk, EPS)
            return run, impl + "+vllm_rms_norm", source + "+vllm._C.rms_norm"
        b = self.elementwise("attn_pre_proj", "qk_norm", _qk_norm_native, (q, k, wq, wk))

        def run():
            gemm()
            b.fn()
        return run, impl + "+" + b.impl, source + "+" + b.source

    def norm(self, op, sh, T):
        """RMSNorm as inside a decoder layer: vLLM fuses the residual add
        into it (fused_add_rms_norm, in place) for every norm but the first
        layer's input norm."""
        h = int(sh["width"])
        x, res, g = self.rand(T, h), self.rand(T, h), self.rand(h) * 0.1 + 1
        fused = self.vllm_op("fused_add_rms_norm")
        if fused is not None:
            return Built(lambda: fused(x, res, g, EPS), None, "vllm_fused_add_rms_norm", "vllm._C.fused_add_rms_norm", False)
        return self.elementwise(op, "fused_add_rms_norm", _fused_add_rms_norm_native, (x, res, g))

    def act(self, op, sh, T):
        w = int(sh["width"])
        x = self.rand(T, 2 * w)
        silu = self.vllm_op("silu_and_mul")
        if silu is not None:
            out = self.torch.empty(T, w, device=self.device, dtype=self.dtype)
            return Built(lambda: silu(out, x), None, "vllm_silu_and_mul", "vllm._C.silu_and_mul", False)
        return self.elementwise(op, "silu_and_mul", _silu_and_mul_native, (x,))

    def rope(self, sh, T):
        """Rotary embedding of q and k in place (NeoX style, vLLM's
        rotary_embedding custom op on [tokens, heads * head_dim]). Qwen3's
        Q/K norms are not here: they count in attn_pre_proj."""
        torch = self.torch
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
        q, k = self.rand(T, qh * hd), self.rand(T, kvh * hd)
        max_pos = max(T, 4096)
        pos = torch.arange(T, device=self.device, dtype=torch.int64)
        inv = 1.0 / (1e6 ** (torch.arange(0, hd, 2, device=self.device, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(max_pos, device=self.device, dtype=torch.float32), inv)
        cache = torch.cat((ang.cos(), ang.sin()), -1).to(self.dtype)  # [max_pos, head_dim]
        rot = self.vllm_op("rotary_embedding")
        if rot is not None:
            return Built(lambda: rot(pos, q, k, hd, cache, True), None, "vllm_rotary_embedding", "vllm._C.rotary_embedding", False)
        return self.elementwise("attn_rope", "rotary_embedding", _rope_native, (pos, q, k, cache))

    def kv_cache_save(self, sh, T):
        """The KV-cache write into paged blocks [blocks, block_size,
        kv_heads, head_dim] at scattered slots: vLLM's
        reshape_and_cache_flash (it runs inside the attention op, so
        compiled modes run it too)."""
        torch = self.torch
        kvh, hd = int(sh["kv_heads"]), int(sh["head_dim"])
        bs = int(sh.get("block_size") or 16)
        blocks = (T + bs - 1) // bs + 4
        k, v = self.rand(T, kvh, hd), self.rand(T, kvh, hd)
        kc, vc = self.rand(blocks, bs, kvh, hd), self.rand(blocks, bs, kvh, hd)
        slots = torch.randperm(blocks * bs, device=self.device)[:T].to(torch.int64)
        save = self.vllm_op("reshape_and_cache_flash")
        if save is not None:
            one = torch.ones((), device=self.device, dtype=torch.float32)
            return Built(lambda: save(k, v, kc, vc, slots, "auto", one, one), None, "vllm_reshape_and_cache_flash",
                         "vllm._C_cache_ops.reshape_and_cache_flash", False)
        # Not compiled: vLLM's compiled modes do not compile the cache write
        # either (it runs inside the attention op), and Inductor could copy
        # the whole cache to write a few slots.
        return Built(lambda: _kv_cache_write_native(k, v, kc, vc, slots), None, "torch_plain", "torch:kv_cache_write", False)

    def attn_reshape(self, op, sh, T):
        """The reshapes around attention as vLLM does them: views of the
        QKV projection's output into q, k, v heads, and of the attention
        output [tokens, heads, head_dim] back to [tokens, heads * head_dim].
        No kernel runs (KERNEL_ONLY 0, as spec.LayerOps and Frontier's H800
        files have them); CUDA_EVENT times the host's view calls."""
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
        if op == "attn_input_reshape":
            qkv = self.rand(T, (qh + 2 * kvh) * hd)
            sizes = [qh * hd, kvh * hd, kvh * hd]
            return Built(lambda: [t.view(T, -1, hd) for t in qkv.split(sizes, -1)], None, "torch_view", "torch.Tensor.view", False)
        out = self.rand(T, qh, hd)
        return Built(lambda: out.view(T, qh * hd), None, "torch_view", "torch.Tensor.view", False)

    def gating_context(self, sh, T):
        """prefill_hot: run FFN-like GEMMs first, as inside a forward pass;
        standalone_legacy: start each repetition from an idle device."""
        if sh.get("gating_context") == "standalone_legacy":
            return None, True
        h = int(sh["hidden"])
        x, w = self.rand(T, h), self.weight(h, h)
        F = self.torch.nn.functional

        def prefix():
            for _ in range(HOT_PREFIX):
                F.linear(x, w)
        return prefix, False

    # --- attention ------------------------------------------------------------
    def attention(self, op, sh):
        """Paged attention of the batch: vLLM's FlashAttention backend
        (vllm.vllm_flash_attn.flash_attn_varlen_func on the block table),
        else FlashInfer, else plain PyTorch."""
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
        if op == "attn_prefill":
            chunks = [int(c) for c in sh["prefill_chunks"]]
            ctxs = [int(c) for c in sh["prefill_contexts"]]
        else:
            ctxs = [int(c) for c in sh["decode_contexts"]]
            chunks = None
        fa = self.vllm_op("flash_attn_varlen_func")
        if fa is not None:
            return self.vllm_flash_attention(fa, sh, qh, kvh, hd, chunks, ctxs)
        if self.cuda:
            r = self.flashinfer_attention(sh, chunks, ctxs if chunks is not None else None, ctxs if chunks is None else None)
            if r:
                return Built(r[0], None, r[2], "flashinfer", False)
        if chunks is not None:
            return Built(self.plain_prefill(qh, kvh, hd, chunks, ctxs), None, "torch_plain", "torch:attn_prefill", False)
        return Built(self.plain_decode(qh, kvh, hd, ctxs), None, "torch_plain", "torch:attn_decode", False)

    def vllm_flash_attention(self, fa, sh, qh, kvh, hd, chunks, ctxs):
        torch = self.torch
        bs = int(sh.get("block_size") or 16)
        if chunks is None:  # decode: one new token on top of each context
            qlens, kvlens = [1] * len(ctxs), list(ctxs)
        else:
            qlens, kvlens = chunks, [k + c for c, k in zip(chunks, ctxs)]
        nblk = [(n + bs - 1) // bs for n in kvlens]
        table = torch.zeros(len(qlens), max(nblk), dtype=torch.int32, device=self.device)
        start = 0
        for i, nb in enumerate(nblk):
            table[i, :nb] = torch.arange(start, start + nb, dtype=torch.int32, device=self.device)
            start += nb
        kc, vc = self.rand(start, bs, kvh, hd), self.rand(start, bs, kvh, hd)
        q = self.rand(sum(qlens), qh, hd)
        out = torch.empty_like(q)
        cu_q = torch.tensor([0] + list(_cumsum(qlens)), dtype=torch.int32, device=self.device)
        used = torch.tensor(kvlens, dtype=torch.int32, device=self.device)
        scale = 1.0 / math.sqrt(hd)
        mq, mk = max(qlens), max(kvlens)
        kw = {}
        version = self.vllm.fa_version()
        if version:
            kw["fa_version"] = version  # the FlashAttention version vLLM picks for this GPU (FA3 on Hopper)
        fn = lambda: fa(q, kc, vc, max_seqlen_q=mq, cu_seqlens_q=cu_q, max_seqlen_k=mk, seqused_k=used,
                        softmax_scale=scale, causal=True, block_table=table, out=out, **kw)
        # Named as AIConfigurator's tables name vLLM's FlashAttention kernels.
        return Built(fn, None, "vllm_flash_attn", "vllm_flash_attn_fa%s" % (version or ""), False)

    def plain_prefill(self, qh, kvh, hd, chunks, ctxs):
        torch = self.torch
        g, scale = qh // kvh, 1.0 / math.sqrt(hd)
        seqs = []
        for c, k in zip(chunks, ctxs):
            L = k + c
            q = self.rand(c, kvh, g, hd)
            kk, vv = self.rand(L, kvh, hd), self.rand(L, kvh, hd)
            qpos = torch.arange(k, L, device=self.device)[:, None]
            mask = torch.arange(L, device=self.device)[None, :] > qpos  # [c, L] future keys
            seqs.append((q, kk, vv, mask))

        def fn():
            outs = []
            for q, kk, vv, mask in seqs:
                s = torch.einsum("ckgd,lkd->kgcl", q, kk).float() * scale
                s = s.masked_fill(mask, float("-inf"))
                p = torch.softmax(s, -1).to(self.dtype)
                outs.append(torch.einsum("kgcl,lkd->ckgd", p, vv))
            return outs
        return fn

    def plain_decode(self, qh, kvh, hd, ctxs):
        torch = self.torch
        g, scale = qh // kvh, 1.0 / math.sqrt(hd)
        b, L = len(ctxs), max(ctxs)
        q = self.rand(b, kvh, g, hd)
        kc, vc = self.rand(b, kvh, L, hd), self.rand(b, kvh, L, hd)
        lens = torch.tensor(ctxs, device=self.device)
        pad = (torch.arange(L, device=self.device)[None, :] >= lens[:, None])[:, None, None, :]  # [b,1,1,L]
        ragged = min(ctxs) != L

        def fn():
            s = torch.matmul(q, kc.transpose(-1, -2)).float() * scale  # [b, kvh, g, L]
            if ragged:
                s = s.masked_fill(pad, float("-inf"))
            p = torch.softmax(s, -1).to(self.dtype)
            return torch.matmul(p, vc)
        return fn

    def flashinfer_attention(self, sh, chunks, ctxs, decode_ctxs):
        """FlashInfer paged attention when importable; None to fall back."""
        try:
            import flashinfer
        except Exception:
            return None

    # --- MoE ----------------------------------------------------------------
    def routing(self, sh, T):
        torch = self.torch
        E, k = int(sh["num_experts"]), int(sh["top_k"])
        if sh.get("routing_path") == "uniform_topk":
            base = torch.arange(T, device=self.device)[:, None] * k + torch.arange(k, device=self.device)[None, :]
            wt = torch.full((T, k), 1.0 / k, device=self.device)
            return (lambda: (base % E, wt.clone())), "torch_plain", "torch:uniform_topk"
        logits = self.rand(T, E, dtype=torch.float32)
        topk = self.vllm_op("fused_topk")
        if topk is not None:
            x = self.rand(T, int(sh["hidden"]))
            return (lambda: topk(x, logits, k, True)), "vllm_fused_topk", "vllm.fused_topk"
        b = self.elementwise("moe_gating_routing_topk", "softmax_topk", _softmax_topk_native, (logits, k))
        return b.fn, b.impl, b.source

    def shuffling(self, sh, T):
        """Sorting the routed tokens by expert: vLLM's moe_align_block_size
        (what its fused MoE runs before the expert GEMMs), else an argsort
        and gather in PyTorch."""
        torch = self.torch
        E, k, h = int(sh["num_experts"]), int(sh["top_k"]), int(sh["hidden"])
        ids2 = (torch.arange(T, device=self.device)[:, None] * k + torch.arange(k, device=self.device)[None, :]) % E
        align = self.vllm_op("moe_align_block_size")
        if align is not None:
            ids32 = ids2.to(torch.int32)
            return Built(lambda: align(ids32, 64, E), None, "vllm_moe_align_block_size", "vllm.moe_align_block_size", False)
        ids = ids2.flatten()
        x = self.rand(T, h)

        def fn():
            order = torch.argsort(ids)
            return x.index_select(0, order // k)
        return Built(fn, None, "torch_plain", "torch:moe_shuffling", False)

    def grouped_gemm(self, sh):
        """This rank's experts on their routed tokens (up GEMM, SiLU-and-mul,
        down GEMM): vLLM's fused_experts (its Triton kernel with the tuned
        config for this shape and device), else one batched GEMM over the
        experts: torch._grouped_mm where it exists, else torch.bmm on the
        active experts padded to the busiest one. Never a loop over
        experts."""
        torch = self.torch
        counts = [int(c) for c in sh["expert_counts"]]
        h, w, L = int(sh["k"]), int(sh["expert_width"]), len(counts)
        fused = self.vllm_op("fused_experts")
        if fused is not None:
            # vLLM's layout: w1 [E, 2N, K], w2 [E, K, N].
            return self.vllm_fused_moe(fused, sh, counts, self.weight(L, 2 * w, h), self.weight(L, h, w))
        w1, w2 = self.weight(L, h, 2 * w), self.weight(L, w, h)
        active = [e for e, c in enumerate(counts) if c > 0]
        if not active:
            return Built(lambda: None, None, "torch_plain", "torch:grouped_gemm_empty", False)
        idx = torch.tensor(active, device=self.device)
        aw1, aw2 = w1.index_select(0, idx), w2.index_select(0, idx)  # outside the timed span
        cs = [counts[e] for e in active]
        R = sum(cs)
        xs = self.rand(R, h)
        if self.cuda and hasattr(torch, "_grouped_mm"):
            offs = torch.tensor(list(_cumsum(cs)), dtype=torch.int32, device=self.device)
            try:
                def gmm():
                    h1 = torch._grouped_mm(xs, aw1, offs=offs)
                    return torch._grouped_mm(_silu_and_mul_native(h1), aw2, offs=offs)
                gmm()
                return Built(gmm, None, "torch_grouped_mm", "torch:_grouped_mm", False)
            except Exception as e:
                self.warn_once("grouped_mm", "torch._grouped_mm failed (%s: %s): experts timed as a padded torch.bmm" % (type(e).__name__, e))
        return Built(_padded_experts(torch, xs, aw1, aw2, cs), None, "torch_bmm_padded", "torch:bmm_padded_experts", False)

    def vllm_fused_moe(self, fused, sh, counts, W1, W2):
        torch = self.torch
        T, E, k = int(sh["tokens"]), int(sh["num_experts"]), int(sh["top_k"])
        L = len(counts)
        if sum(counts) < T * k and E - L < k:
            # The shape routes fewer picks to this rank's experts than its
            # tokens make (an edge of the planner's domain): the other picks
            # go to experts of no rank here, as an EP rank's are.
            E = L + k
        ids = _assign(counts, T, k, E)  # [T][k] global ids, local experts first
        topk_ids = torch.tensor(ids, dtype=torch.int32, device=self.device)
        topk_w = torch.full((T, k), 1.0 / k, dtype=torch.float32, device=self.device)
        x = self.rand(T, int(sh["k"]))
        if L == E:
            fn = lambda: fused(x, W1, W2, topk_w, topk_ids)
        else:
            emap = torch.full((E,), -1, dtype=torch.int32, device=self.device)
            emap[:L] = torch.arange(L, dtype=torch.int32, device=self.device)
            fn = lambda: fused(x, W1, W2, topk_w, topk_ids, global_num_experts=E, expert_map=emap)
        return Built(fn, None, "vllm_fused_moe", "vllm.fused_experts", False)

    # --- host -------------------------------------------------------------
    def host_op(self, op, sh):
        """Python proxies of vLLM's host-side step work (impl python_proxy):
        the same kind of per-request and per-token Python and tensor work,
        not the engine itself."""
        torch = self.torch
        b = max(1, int(sh.get("batch_size", 1)))
        p, d = int(sh.get("num_prefill_tokens", 0)), int(sh.get("num_decode_tokens", 0))
        npre = b - d
        per = [max(1, p // max(npre, 1))] * npre + [1] * d
        if op == "cpu_schedule":
            def fn():
                free = list(range(4096))
                out = {}
                for i, n in enumerate(sorted(per, reverse=True)):
                    blocks = [free.pop() for _ in range((n + 15) // 16)]
                    out["req-%d" % i] = {"num_tokens": n, "blocks": blocks}
                return out
            return fn, None, "python_proxy"
        if op == "cpu_prepare_inputs":
            def fn():
                ids, pos, slots = [], [], []
                for i, n in enumerate(per):
                    ids.extend([i] * n)
                    pos.extend(range(n))
                    slots.extend(range(i * 4096, i * 4096 + n))
                t = [torch.tensor(v, dtype=torch.int64).to(self.device, non_blocking=True) for v in (ids, pos, slots)]
                bt = torch.zeros((b, 256), dtype=torch.int32).to(self.device, non_blocking=True)
                return t, bt
            return fn, None, "python_proxy"
        if op == "cpu_sampler":
            logits = self.rand(b, max(2, int(sh.get("vocab", 32000))), dtype=torch.float32)
            return (lambda: torch.argmax(torch.softmax(logits, -1), -1).tolist()), None, "python_proxy"
        if op == "cpu_process_outputs":
            vocab = ["tok%d" % i for i in range(1024)]

            def fn():
                outs = []
                for i in range(b):
                    toks = [i % 1024]
                    done = toks[-1] == 2 or len(toks) >= 4096
                    outs.append({"id": i, "text": "".join(vocab[t] for t in toks), "finished": done})
                return outs
            return fn, None, "python_proxy"
        if op == "cpu_ray_comm":
            msg = {"req-%d" % i: {"num_tokens": n, "blocks": list(range((n + 15) // 16))} for i, n in enumerate(per)}
            return (lambda: pickle.loads(pickle.dumps(msg))), None, "python_proxy"
        raise ValueError("unknown host op %r" % op)

    # --- host issue costs ----------------------------------------------------
    def issue(self, op, warmup, repeats):
        """Host time to issue one unit of op, ms: ISSUE_BATCH issues timed
        on the wall clock while a GPU spin kernel keeps the queue busy, so
        the time is the CPU's (Python, dispatcher, launch), never the
        kernels'. On the CPU the same calls run synchronously: the time is
        the Python and dispatcher part plus a tiny CPU kernel (impl says
        cpu_dispatch)."""
        fn, impl = self.issue_fn(op)
        torch = self.torch
        for _ in range(max(1, warmup)):
            fn()
        self.sync()
        out = []
        for _ in range(repeats):
            if self.cuda:
                torch.cuda._sleep(BUSY_CYCLES)
            t0 = time.perf_counter_ns()
            for _ in range(ISSUE_BATCH):
                fn()
            out.append((time.perf_counter_ns() - t0) / 1e6 / ISSUE_BATCH)
            self.sync()
        if not self.cuda:
            impl += "+cpu_dispatch"
        return out, impl

    def issue_fn(self, op):
        torch = self.torch
        a, b, c = self.rand(8, 64), self.rand(8, 64), self.rand(8, 64)
        if op == "issue_call":
            return (lambda: a.view(64, 8)), "aten_view"
        if op == "issue_module":
            class Ident(torch.nn.Module):
                def forward(self, x):
                    return x
            m = Ident()
            return (lambda: m(a)), "nn_module"
        if op == "issue_aten":
            return (lambda: torch.add(a, b, out=c)), "aten_add"
        if op == "issue_custom":
            try:
                import vllm._custom_ops  # noqa: F401  registers torch.ops._C
                w = self.rand(64)
                return (lambda: torch.ops._C.rms_norm(c, a, w, 1e-6)), "vllm_C_rms_norm"
            except Exception:
                add = torch.ops.aten.add.out
                return (lambda: add(a, b, out=c)), "torch_ops_aten_add"
        if op == "issue_triton":
            if self.cuda:
                try:
                    return _triton_issue(torch, a, b, c), "triton_jit"
                except Exception as e:
                    self.warn_once("triton", "Triton unavailable (%s): issue_triton timed as a Python proxy" % e)
            return _triton_proxy(torch, a, b, c), "python_proxy"
        if op == "issue_attention":
            q = self.rand(8, 4, 64)
            k, v = self.rand(8, 4, 64), self.rand(8, 4, 64)
            try:
                from vllm.vllm_flash_attn import flash_attn_varlen_func
                cu = torch.tensor([0, 8], dtype=torch.int32, device=self.device)
                return (lambda: flash_attn_varlen_func(q, k, v, max_seqlen_q=8, cu_seqlens_q=cu, max_seqlen_k=8,
                                                       cu_seqlens_k=cu, causal=True)), "vllm_flash_attn"
            except Exception:
                qt, kt, vt = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
                return (lambda: _sdpa(torch, qt, kt, vt)), "torch_sdpa"
        if op == "issue_collective":
            import torch.distributed as dist
            self.ensure_group(1)
            return (lambda: dist.all_reduce(c)), ("nccl" if self.cuda else "gloo")
        if op == "issue_graph":
            if not self.cuda:
                raise RuntimeError("issue_graph replays a CUDA graph: it needs a CUDA device")
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream(self.device)
            s.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(s):
                for _ in range(3):
                    torch.add(a, b, out=c)
                with torch.cuda.graph(g):
                    for _ in range(20):
                        torch.add(a, b, out=c)
            torch.cuda.current_stream(self.device).wait_stream(s)
            return g.replay, "cuda_graph_replay"
        if op == "issue_layer":
            layer = _mini_layer(torch, 64, 4, 16).to(self.device, self.dtype)
            x, pos = self.rand(8, 64), torch.arange(8, device=self.device)
            return (lambda: layer(x, pos)), "torch_plain_layer"
        raise ValueError("unknown issue op %r" % op)

    # --- collectives ----------------------------------------------------------
    def collective(self, op, sh, timing, warmup, repeats):
        n = int(sh["workers"])
        if self.cuda and self.torch.cuda.device_count() < n:
            raise RuntimeError("%s over %d workers needs %d visible GPUs, %d visible" % (op, n, n, self.torch.cuda.device_count()))
        self.ensure_group(n)
        prim = exchange_primitive(op, sh.get("backend", ""))
        if prim == "reduce_scatter" and not self.cuda:
            prim = "all_reduce"  # gloo has no reduce-scatter: the all-reduce it would be cut from
        msg = (op, int(sh["size_bytes"]), timing, warmup, repeats, prim, int(sh.get("dp_ranks", 0) or n))
        for conn in self.group[1]:
            conn.send(msg)
        samples = run_collective(self.torch, 0, n, self.device, msg)
        for conn in self.group[1]:
            conn.recv()
        impl = "nccl" if self.cuda else "gloo"
        if op in ("ep_dispatch", "ep_combine"):
            # Say what was timed: the torch.distributed primitive, and for
            # the kernel backends that it only stands in for them.
            impl += "_" + prim
            if sh.get("backend") in ("pplx", "deepep_high_throughput", "deepep_low_latency"):
                impl += "_standin_for_" + sh["backend"]
        return samples, impl

    def ensure_group(self, n):
        if self.group and self.group[0] == n:
            return
        self.close_group()
        import multiprocessing as mp
        import torch.distributed as dist
        ctx = mp.get_context("spawn")
        fd, init = tempfile.mkstemp(prefix="ftk-pg-")
        os.close(fd)
        os.remove(init)
        conns, procs = [], []
        for r in range(1, n):
            parent, child = ctx.Pipe()
            dev = "cuda:%d" % r if self.cuda else "cpu"
            pr = ctx.Process(target=_collective_rank, args=(r, n, init, dev, child), daemon=True)
            pr.start()
            conns.append(parent)
            procs.append(pr)
        dist.init_process_group("nccl" if self.cuda else "gloo", init_method="file://" + init, rank=0, world_size=n)
        self.group = (n, conns, procs, init)

    def close_group(self):
        if not self.group:
            return
        import torch.distributed as dist
        _, conns, procs, init = self.group
        for c in conns:
            try:
                c.send(None)
            except Exception:
                pass
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
        dist.destroy_process_group()
        try:
            os.remove(init)
        except OSError:
            pass
        self.group = None

    def close(self):
        self.close_group()


def _triton_issue(torch, a, b, c):
    """A Triton JIT kernel with 20 arguments (about what vLLM's fused MoE
    kernel passes), launched through JITFunction.run."""
    import triton
    import triton.language as tl

    @triton.jit
    def _add(x, y, z, n, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B)
        m = i < n
        tl.store(z + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

    n = a.numel()
    return lambda: _add[(1,)](a, b, c, n, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, B=512)


def _triton_proxy(torch, a, b, c):
    """Without Triton: the Python of a JIT launch (argument binding, a
    specialisation key, a cache lookup) around one ATen kernel."""
    cache = {}

    def run(x, y, z, n, *scalars, B=512):
        key = (x.dtype, y.dtype, z.dtype, n % 16 == 0) + tuple(s % 16 == 0 for s in scalars) + (B,)
        k = cache.get(key)
        if k is None:
            k = cache[key] = lambda: torch.add(x, y, out=z)
        return k()

    n = a.numel()
    return lambda: run(a, b, c, n, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, B=512)


def _sdpa(torch, q, k, v):
    """Causal attention: PyTorch's fused SDPA where it exists (2.0+), the
    matmul-softmax-matmul it replaces before that."""
    F = torch.nn.functional
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    s = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    n = s.shape[-1]
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.matmul(torch.softmax(s, -1), v)


def _mini_layer(torch, hidden, heads, head_dim):
    """A decoder layer of plain torch modules (norm, QKV, rotary, SDPA,
    output, norm, gated MLP) for the per-layer module cost."""
    nn, F = torch.nn, torch.nn.functional

    class Norm(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(torch.ones(n))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = Norm(hidden), Norm(hidden)
            self.qkv = nn.Linear(hidden, 3 * heads * head_dim, bias=False)
            self.o = nn.Linear(heads * head_dim, hidden, bias=False)
            self.up = nn.Linear(hidden, 4 * hidden, bias=False)
            self.down = nn.Linear(2 * hidden, hidden, bias=False)

        def forward(self, x, pos):
            h = self.n1(x)
            q, k, v = self.qkv(h).view(x.shape[0], 3, heads, head_dim).unbind(1)
            cos = torch.cos(pos[:, None, None] * 1e-2)
            q, k = q * cos, k * cos
            a = _sdpa(torch, q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1))
            x = x + self.o(a.transpose(0, 1).reshape(x.shape[0], -1))
            g, u = self.up(self.n2(x)).chunk(2, -1)
            return x + self.down(F.silu(g) * u)

    return Layer()


def _cumsum(xs):
    s = 0
    for x in xs:
        s += x
        yield s


def _assign(counts, T, k, E):
    """A routing of T tokens to k distinct experts each in which local
    expert e (global id e) gets counts[e] tokens; the remaining picks go to
    non-local experts."""
    L = len(counts)
    rows = [[] for _ in range(T)]
    p = 0
    for e, c in enumerate(counts):
        for j in range(c):
            rows[(p + j) % T].append(e)
        p += c
    for r, row in enumerate(rows):
        nxt = L + r % max(1, E - L)
        while len(row) < k:
            if E == L:
                raise ValueError("counts %s do not fill every token's top-k (%d tokens, top-%d)" % (counts, T, k))
            if nxt >= E:
                nxt = L
            if nxt not in row:
                row.append(nxt)
            nxt += 1
    return rows


def exchange_primitive(op, backend):
    """The torch.distributed primitive that times an EP exchange of vLLM's
    all2all backend (vllm/distributed/device_communicators/all2all.py):
    allgather_reducescatter all-gathers (dispatch) and reduce-scatters
    (combine); naive broadcasts each DP rank's share (dispatch) and
    all-reduces the gathered buffer (combine); the kernel backends move
    routed copies, timed as all_to_all_single."""
    if op not in ("ep_dispatch", "ep_combine"):
        return op
    if backend in ("", "allgather_reducescatter"):
        return "all_gather" if op == "ep_dispatch" else "reduce_scatter"
    if backend == "naive":
        return "broadcast" if op == "ep_dispatch" else "all_reduce"
    return "all_to_all"


def run_collective(torch, rank, world, device, msg):
    """One collective request on one rank; rank 0 returns the timings.
    size is the bytes one rank receives (the size_bytes feature): the
    gathered buffer for all_gather and broadcast, the buffer reduced for
    reduce_scatter and all_reduce, the copies received for all_to_all."""
    import torch.distributed as dist
    op, size, timing, warmup, repeats, prim, dp = msg
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    elems = max(world, size // (2 if cuda else 4))
    elems -= elems % world
    x = torch.ones(elems, dtype=dtype, device=device)
    y = torch.empty_like(x)
    part = x[: elems // world]
    share = max(1, elems // max(1, dp))

    def once():
        if prim == "all_reduce":
            dist.all_reduce(x)
        elif prim == "send_recv":
            if rank == 0:
                dist.send(x, 1)
            elif rank == 1:
                dist.recv(y, 0)
        elif prim == "all_gather":
            dist.all_gather(list(y.chunk(world)), part)
        elif prim == "reduce_scatter":
            dist.reduce_scatter(part, list(x.chunk(world)))
        elif prim == "broadcast":
            for src in range(dp):
                dist.broadcast(x[src * share:(src + 1) * share] if (src + 1) * share <= elems else x[-share:], src % world)
        else:
            dist.all_to_all_single(y, x)

    for _ in range(warmup):
        once()
    out = []
    if cuda and timing == "kernel_only" and rank == 0:
        from torch.profiler import ProfilerActivity, profile
        for _ in range(repeats):
            dist.barrier()
            torch.cuda.synchronize(device)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                once()
                torch.cuda.synchronize(device)
            out.append(sum(getattr(e, "device_time", getattr(e, "cuda_time", 0)) for e in prof.events()) / 1e3)
        return out
    for _ in range(repeats):
        dist.barrier()
        if cuda:
            torch.cuda.synchronize(device)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            once()
            e.record()
            torch.cuda.synchronize(device)
            out.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter_ns()
            once()
            out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def _collective_rank(rank, world, init, device, conn):
    """A helper rank of a collective group (a child of the worker)."""
    import torch
    import torch.distributed as dist
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", init_method="file://" + init, rank=rank, world_size=world)
    try:
        while True:
            try:
                msg = conn.recv()
            except EOFError:
                break
            if msg is None:
                break
            run_collective(torch, rank, world, dev, msg)
            conn.send("done")
    finally:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cpu", help="cpu or cuda:N")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--kernels", default="auto", choices=KERNEL_MODES,
                    help="vllm: vLLM's kernels; compiled: torch.compile of each op as vLLM writes it; eager: plain PyTorch; auto: vllm if it imports, else compiled")
    args = ap.parse_args()
    # The protocol owns the real stdout; anything else printed goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        import torch
        worker = Worker(torch, args.device, args.threads, args.kernels)
    except Exception as e:
        send({"hello": "ftk-worker", "protocol": PROTOCOL, "ok": False, "error": "%s: %s" % (type(e).__name__, e)})
        return 2
    send(worker.hello())
    try:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError as e:
                send({"id": None, "ok": False, "error": "bad request: %s" % e})
                continue
            if req.get("op") == "exit":
                break
            try:
                resp = worker.handle(req)
            except Exception as e:
                traceback.print_exc(file=sys.stderr)
                resp = {"id": req.get("id"), "ok": False, "error": "%s: %s" % (type(e).__name__, e)}
                if worker.cuda:
                    torch.cuda.empty_cache()
            send(resp)
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
