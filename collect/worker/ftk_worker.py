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
        return "torch.distributed." + impl
    return "torch:" + op


def summarize(samples):
    return {
        "min": min(samples), "max": max(samples), "mean": statistics.fmean(samples),
        "median": statistics.median(samples), "std": statistics.pstdev(samples), "count": len(samples),
    }


class Worker:
    def __init__(self, torch, device, threads):
        self.torch = torch
        if threads > 0:
            torch.set_num_threads(threads)
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            torch.cuda.set_device(self.device)
        self.dtype = torch.bfloat16 if self.cuda else torch.float32
        self.group = None  # collectives: (world size, child processes)
        self.warned = set()
        # Weights are reused across requests (the plan walks token counts
        # of the same operators); least recently used ones go past a budget.
        self.weights = collections.OrderedDict()
        self.weight_budget = (8 if self.cuda else 2) << 30

    def hello(self):
        t = self.torch
        name = t.cuda.get_device_name(self.device) if self.cuda else (platform.processor() or platform.machine() or "cpu")
        return {
            "hello": "ftk-worker", "protocol": PROTOCOL, "python": platform.python_version(),
            "torch": t.__version__, "device": str(self.device), "device_name": name,
            "cuda": t.version.cuda, "cudnn": t.backends.cudnn.version() if self.cuda else None,
            "flashinfer": pkg_version("flashinfer-python", "flashinfer"), "vllm": pkg_version("vllm"),
            "threads": t.get_num_threads(), "dtype": str(self.dtype).replace("torch.", ""),
        }

    def rand(self, *shape, dtype=None):
        return self.torch.randn(*shape, device=self.device, dtype=dtype or self.dtype) * 0.02

    def weight(self, *shape):
        """A random weight tensor of this shape, cached between requests."""
        w = self.weights.pop(shape, None)
        if w is None:
            w = self.rand(*shape)
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
        if timing in ("cuda_event", "kernel_only") and not self.cuda:
            raise RuntimeError("timing %s needs a CUDA device; this worker runs on %s" % (timing, self.device))
        if op in COLLECTIVES:
            samples, impl = self.collective(op, sh, timing, warmup, repeats)
        elif op in ISSUE_OPS:
            samples, impl = self.issue(op, warmup, repeats)
        else:
            fn, pre, impl, cold = self.build(op, sh)
            samples = self.time(fn, pre, cold, timing, warmup, repeats)
        return {"id": req["id"], "ok": True, "stats": summarize(samples), "impl": impl,
                "kernel_source": kernel_source(op, impl),
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
    def build(self, op, sh):
        """Returns (fn, pre, impl, cold): fn runs the operator once."""
        torch = self.torch
        F = torch.nn.functional
        T = max(1, int(sh.get("tokens", 1)))
        if op in HOST_OPS:
            return self.host_op(op, sh) + (False,)
        if op in GEMM_OPS:
            k, n = int(sh["k"]), int(sh["n"])
            x, w = self.rand(T, k), self.weight(k, n)
            pre, cold = None, False
            if op == "moe_gating_linear":
                pre, cold = self.gating_context(sh, T)
            return (lambda: torch.matmul(x, w)), pre, "torch_plain", cold
        if op in NORM_OPS:
            h = int(sh["width"])
            x, g = self.rand(T, h), self.rand(h) + 1

            def rmsnorm():
                xf = x.float()
                return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * g
            return rmsnorm, None, "torch_plain", False
        if op in ACT_OPS:
            w = int(sh["width"])
            x = self.rand(T, 2 * w)
            return (lambda: F.silu(x[:, :w]) * x[:, w:]), None, "torch_plain", False
        if op == "add":
            a, b = self.rand(T, int(sh["width"])), self.rand(T, int(sh["width"]))
            return (lambda: a + b), None, "torch_plain", False
        if op == "emb":
            table = self.weight(max(1, int(sh["vocab"])), int(sh["width"]))
            ids = torch.randint(0, table.shape[0], (T,), device=self.device)
            return (lambda: F.embedding(ids, table)), None, "torch_plain", False
        if op == "attn_rope":
            return self.rope(sh, T) + (False,)
        if op in ("attn_input_reshape", "attn_kv_cache_save", "attn_output_reshape"):
            return self.attn_token_op(op, sh, T) + (False,)
        if op == "attn_prefill":
            return self.attn_prefill(sh) + (False,)
        if op == "attn_decode":
            return self.attn_decode(sh) + (False,)
        if op == "moe_gating_routing_topk":
            fn, impl = self.routing(sh, T)
            pre, cold = self.gating_context(sh, T)
            return fn, pre, impl, cold
        if op == "moe_shuffling":
            return self.shuffling(sh, T) + (False,)
        if op == "moe_grouped_gemm":
            return self.grouped_gemm(sh) + (False,)
        raise ValueError("unknown operator %r" % op)

    def gating_context(self, sh, T):
        """prefill_hot: run FFN-like GEMMs first, as inside a forward pass;
        standalone_legacy: start each repetition from an idle device."""
        if sh.get("gating_context") == "standalone_legacy":
            return None, True
        h = int(sh["hidden"])
        x, w = self.rand(T, h), self.weight(h, h)

        def prefix():
            for _ in range(HOT_PREFIX):
                self.torch.matmul(x, w)
        return prefix, False

    def rope(self, sh, T):
        torch = self.torch
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
        q, k = self.rand(T, qh, hd), self.rand(T, kvh, hd)
        half = hd // 2
        pos = torch.arange(T, device=self.device, dtype=torch.float32)
        inv = 1.0 / (1e6 ** (torch.arange(half, device=self.device, dtype=torch.float32) / half))
        ang = torch.outer(pos, inv)
        cos, sin = ang.cos().to(self.dtype)[:, None, :], ang.sin().to(self.dtype)[:, None, :]
        qk_norm = bool(sh.get("qk_norm"))

        def norm(t):
            tf = t.float()
            return (tf * torch.rsqrt(tf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(t.dtype)

        def rot(t):
            a, b = t[..., :half], t[..., half:]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)

        def fn():
            qq, kk = (norm(q), norm(k)) if qk_norm else (q, k)
            return rot(qq), rot(kk)
        return fn, None, "torch_plain"

    def attn_token_op(self, op, sh, T):
        torch = self.torch
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
        if op == "attn_input_reshape":
            qkv = self.rand(T, (qh + 2 * kvh) * hd)
            sizes = [qh * hd, kvh * hd, kvh * hd]
            return (lambda: [t.reshape(T, -1, hd).contiguous() for t in qkv.split(sizes, -1)]), None, "torch_plain"
        if op == "attn_kv_cache_save":
            k, v = self.rand(T, kvh, hd), self.rand(T, kvh, hd)
            slots = T + 64
            kc, vc = self.rand(slots, kvh, hd), self.rand(slots, kvh, hd)
            idx = torch.randperm(slots, device=self.device)[:T]

            def save():
                kc.index_copy_(0, idx, k)
                vc.index_copy_(0, idx, v)
            return save, None, "torch_plain"
        out = self.rand(qh, T, hd)  # head-major, as attention kernels leave it
        return (lambda: out.transpose(0, 1).reshape(T, qh * hd).contiguous()), None, "torch_plain"

    def attn_prefill(self, sh):
        chunks = [int(c) for c in sh["prefill_chunks"]]
        ctxs = [int(c) for c in sh["prefill_contexts"]]
        if self.cuda:
            r = self.flashinfer_attention(sh, chunks, ctxs, None)
            if r:
                return r
        torch = self.torch
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
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
        return fn, None, "torch_plain"

    def attn_decode(self, sh):
        torch = self.torch
        ctxs = [int(c) for c in sh["decode_contexts"]]
        if self.cuda:
            r = self.flashinfer_attention(sh, None, None, ctxs)
            if r:
                return r
        qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
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
        return fn, None, "torch_plain"

    def flashinfer_attention(self, sh, chunks, ctxs, decode_ctxs):
        """FlashInfer paged attention when importable; None to fall back."""
        try:
            import flashinfer
        except Exception:
            return None
        torch = self.torch
        try:
            qh, kvh, hd = int(sh["q_heads"]), int(sh["kv_heads"]), int(sh["head_dim"])
            ps = int(sh.get("block_size") or 16)
            lens = [k + c for c, k in zip(chunks, ctxs)] if chunks is not None else decode_ctxs
            pages = [(n + ps - 1) // ps for n in lens]
            indptr = torch.tensor([0] + list(_cumsum(pages)), dtype=torch.int32, device=self.device)
            indices = torch.arange(sum(pages), dtype=torch.int32, device=self.device)
            last = torch.tensor([n - (p - 1) * ps for n, p in zip(lens, pages)], dtype=torch.int32, device=self.device)
            cache = self.rand(sum(pages), 2, ps, kvh, hd)
            ws = torch.empty(256 << 20, dtype=torch.uint8, device=self.device)
            if chunks is not None:
                qo = torch.tensor([0] + list(_cumsum(chunks)), dtype=torch.int32, device=self.device)
                q = self.rand(sum(chunks), qh, hd)
                w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD")
                if hasattr(w, "plan"):
                    w.plan(qo, indptr, indices, last, qh, kvh, hd, ps, causal=True, q_data_type=self.dtype)
                    fn = lambda: w.run(q, cache)
                else:
                    w.begin_forward(qo, indptr, indices, last, qh, kvh, hd, ps)
                    fn = lambda: w.forward(q, cache, causal=True)
            else:
                q = self.rand(len(lens), qh, hd)
                w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
                if hasattr(w, "plan"):
                    w.plan(indptr, indices, last, qh, kvh, hd, ps, q_data_type=self.dtype, kv_data_type=self.dtype)
                    fn = lambda: w.run(q, cache)
                else:
                    w.begin_forward(indptr, indices, last, qh, kvh, hd, ps, data_type=self.dtype)
                    fn = lambda: w.forward(q, cache)
            fn()
            return fn, None, "flashinfer"
        except Exception as e:
            self.warn_once("flashinfer", "FlashInfer failed (%s: %s): using plain PyTorch attention" % (type(e).__name__, e))
            return None

    # --- MoE ----------------------------------------------------------------
    def routing(self, sh, T):
        torch = self.torch
        E, k = int(sh["num_experts"]), int(sh["top_k"])
        if sh.get("routing_path") == "uniform_topk":
            base = torch.arange(T, device=self.device)[:, None] * k + torch.arange(k, device=self.device)[None, :]
            wt = torch.full((T, k), 1.0 / k, device=self.device)
            return (lambda: (base % E, wt.clone())), "torch_plain"
        logits = self.rand(T, E, dtype=self.torch.float32)

        def fn():
            p = torch.softmax(logits, -1)
            w, ids = torch.topk(p, k, -1)
            return w / w.sum(-1, keepdim=True), ids
        return fn, "torch_plain"

    def shuffling(self, sh, T):
        torch = self.torch
        E, k, h = int(sh["num_experts"]), int(sh["top_k"]), int(sh["hidden"])
        ids = ((torch.arange(T, device=self.device)[:, None] * k + torch.arange(k, device=self.device)[None, :]) % E).flatten()
        x = self.rand(T, h)

        def fn():
            order = torch.argsort(ids)
            return x.index_select(0, order // k)
        return fn, None, "torch_plain"

    def grouped_gemm(self, sh):
        torch = self.torch
        F = torch.nn.functional
        counts = [int(c) for c in sh["expert_counts"]]
        h, w, L = int(sh["k"]), int(sh["expert_width"]), len(counts)
        R = max(1, sum(counts))
        w1, w2 = self.weight(L, h, 2 * w), self.weight(L, w, h)
        if self.cuda:
            r = self.vllm_fused_moe(sh, counts, w1, w2)
            if r:
                return r
        xs = self.rand(R, h)
        out = torch.empty_like(xs)
        segs, off = [], 0
        for e, c in enumerate(counts):
            if c > 0:
                segs.append((e, off, off + c))
                off += c

        def fn():
            for e, a, b in segs:
                h1 = torch.matmul(xs[a:b], w1[e])
                act = F.silu(h1[:, :w]) * h1[:, w:]
                out[a:b] = torch.matmul(act, w2[e])
            return out
        return fn, None, "torch_plain"

    def vllm_fused_moe(self, sh, counts, w1, w2):
        """vLLM's fused MoE kernel on this rank's experts, when importable;
        None to fall back."""
        try:
            from vllm.model_executor.layers.fused_moe import fused_experts
        except Exception:
            return None
        torch = self.torch
        try:
            T, E, k = int(sh["tokens"]), int(sh["num_experts"]), int(sh["top_k"])
            L = len(counts)
            ids = _assign(counts, T, k, E)  # [T][k] global ids, local experts first
            topk_ids = torch.tensor(ids, dtype=torch.int32, device=self.device)
            topk_w = torch.full((T, k), 1.0 / k, dtype=torch.float32, device=self.device)
            x = self.rand(T, int(sh["k"]))
            # vLLM layout: w1 [E, 2N, K], w2 [E, K, N]
            W1, W2 = w1.transpose(1, 2).contiguous(), w2.transpose(1, 2).contiguous()
            emap = torch.full((E,), -1, dtype=torch.int32, device=self.device)
            emap[:L] = torch.arange(L, dtype=torch.int32, device=self.device)
            if L == E:
                fn = lambda: fused_experts(x, W1, W2, topk_w, topk_ids)
            else:
                fn = lambda: fused_experts(x, W1, W2, topk_w, topk_ids, global_num_experts=E, expert_map=emap)
            fn()
            return fn, None, "vllm_fused_moe"
        except Exception as e:
            self.warn_once("vllm", "vLLM fused MoE failed (%s: %s): using plain PyTorch experts" % (type(e).__name__, e))
            return None

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
                raise ValueError("counts do not fill every token's top-k")
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
        worker = Worker(torch, args.device, args.threads)
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
