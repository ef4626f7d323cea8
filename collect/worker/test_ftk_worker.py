"""CPU tests of ftk_worker.py: every operator path that needs no CUDA.
Run by collect's Go tests (TestWorkerPythonTests) with the Python that has
torch; by hand: cd collect/worker && python3 -m unittest test_ftk_worker.

- the operators as vLLM writes them (natives) against direct references;
- eager and compiled modes, labels and fallbacks (PyTorch without
  torch.compile gets a recording stand-in for it, so the compile plumbing
  is tested everywhere; where torch.compile exists the real one runs);
- vLLM dispatch through testdata/fakevllm, a test double of vLLM's op
  signatures (cited in its files): every op runs vLLM's kernel, and a
  missing (renamed) op is reported and falls back;
- the MoE experts as one batched GEMM, equal to a loop over experts;
- the protocol (hello, answers, errors) of the script as ftk runs it."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "testdata", "fakevllm")
sys.path.insert(0, HERE)
import ftk_worker as fw  # noqa: E402

LINEAR = {"k": 64, "n": 96, "tokens": 8, "hidden": 64, "width": 32, "vocab": 100,
          "q_heads": 4, "kv_heads": 2, "head_dim": 16, "qk_norm": True}
ATTN = {"q_heads": 4, "kv_heads": 2, "head_dim": 16, "block_size": 16, "tokens": 8,
        "prefill_chunks": [5, 3], "prefill_contexts": [0, 20], "decode_contexts": [7, 33, 16]}
MOE = {"k": 32, "n": 8, "expert_width": 16, "expert_counts": [3, 0, 5, 1], "tokens": 6, "hidden": 32,
       "num_experts": 8, "top_k": 2, "gating_context": "standalone_legacy", "routing_path": "standard_fused_topk"}
OPS = [(op, LINEAR) for op in ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "input_layernorm",
                               "post_attention_layernorm", "mlp_act", "attn_rope", "add", "emb", "lm_head_linear")] + \
      [(op, ATTN) for op in ("attn_kv_cache_save", "attn_prefill", "attn_decode", "attn_input_reshape", "attn_output_reshape")] + \
      [(op, MOE) for op in ("moe_gating_routing_topk", "moe_shuffling", "moe_grouped_gemm", "moe_gating_linear")]


def fake_vllm(drop=""):
    """Puts the test double on sys.path (and drops cached imports)."""
    os.environ["FAKE_VLLM_DROP"] = drop
    for m in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[m]
    if FAKE not in sys.path:
        sys.path.insert(0, FAKE)


def no_vllm():
    if FAKE in sys.path:
        sys.path.remove(FAKE)
    for m in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[m]


class Natives(unittest.TestCase):
    def test_fused_add_rms_norm(self):
        x, r, w = torch.randn(5, 8), torch.randn(5, 8), torch.randn(8)
        out, res = fw._fused_add_rms_norm_native(x, r, w)
        s = x + r
        self.assertTrue(torch.allclose(res, s))
        self.assertTrue(torch.allclose(out, s / torch.sqrt((s * s).mean(-1, keepdim=True) + fw.EPS) * w, atol=1e-5))

    def test_rope_rotates_pairs(self):
        T, hd = 3, 8
        q, k = torch.randn(T, 2 * hd), torch.randn(T, hd)
        ang = torch.rand(10, hd // 2)
        cache = torch.cat((ang.cos(), ang.sin()), -1)
        pos = torch.tensor([0, 4, 9])
        rq, rk = fw._rope_native(pos, q, k, cache)
        for t in range(T):
            for h in range(2):
                for i in range(hd // 2):
                    a, b = q[t, h * hd + i], q[t, h * hd + i + hd // 2]
                    c, s = ang[pos[t], i].cos(), ang[pos[t], i].sin()
                    self.assertAlmostEqual(float(rq[t, h * hd + i]), float(a * c - b * s), places=5)
                    self.assertAlmostEqual(float(rq[t, h * hd + i + hd // 2]), float(b * c + a * s), places=5)
        self.assertEqual(rk.shape, k.shape)

    def test_padded_experts_equal_a_loop(self):
        counts, h, w = [3, 5, 1], 8, 4
        xs = torch.randn(sum(counts), h)
        w1, w2 = torch.randn(3, h, 2 * w), torch.randn(3, w, h)
        got = fw._padded_experts(torch, xs, w1, w2, counts)()
        off, want = 0, []
        for e, c in enumerate(counts):
            h1 = xs[off:off + c] @ w1[e]
            want.append(fw._silu_and_mul_native(h1) @ w2[e])
            off += c
        self.assertTrue(torch.allclose(got, torch.cat(want), atol=1e-5))

    def test_kv_cache_write(self):
        k, v = torch.randn(3, 2, 4), torch.randn(3, 2, 4)
        kc, vc = torch.zeros(2, 4, 2, 4), torch.zeros(2, 4, 2, 4)
        fw._kv_cache_write_native(k, v, kc, vc, torch.tensor([5, 0, 2]))
        self.assertTrue(torch.equal(kc[1, 1], k[0]) and torch.equal(vc[0, 2], v[2]))


class Modes(unittest.TestCase):
    def setUp(self):
        no_vllm()

    def check_all(self, w, want_prefix):
        for op, sh in OPS:
            b = w.build(op, sh)
            b.fn()
            yield op, b

    def test_eager_labels_every_op_plain(self):
        w = fw.Worker(torch, "cpu", 1, "eager")
        self.assertEqual(w.mode, "eager")
        for op, b in self.check_all(w, "torch:"):
            origin_plain = b.source.startswith("torch:") or "+torch:" in b.source or b.source.startswith(("torch.nn.functional.", "torch.Tensor.view"))
            self.assertTrue(origin_plain, "%s: %s" % (op, b.source))
            self.assertNotIn("vllm", b.source)
        self.assertEqual(w.build("moe_grouped_gemm", MOE).source, "torch:bmm_padded_experts")

    def test_compiled_mode(self):
        """torch.compile of each element-wise op; PyTorch without it gets a
        recording stand-in (labelled here), so the plumbing is tested."""
        compiled, restore = [], []
        if not (hasattr(torch, "compile") and hasattr(torch, "_dynamo")):
            class Dyn:  # stand-in for torch._dynamo
                class config:
                    cache_size_limit = 8

                @staticmethod
                def mark_dynamic(t, d):
                    pass

            def compile_standin(fn):
                compiled.append(fn.__name__)
                return fn
            torch.compile, torch._dynamo = compile_standin, Dyn
            restore = ["compile", "_dynamo"]
        try:
            w = fw.Worker(torch, "cpu", 1, "compiled")
            self.assertEqual(w.mode, "compiled")
            for op, want in (("input_layernorm", "inductor:fused_add_rms_norm"), ("mlp_act", "inductor:silu_and_mul"),
                             ("attn_rope", "inductor:rotary_embedding"), ("attn_kv_cache_save", "torch:kv_cache_write"),
                             ("attn_pre_proj", "torch.nn.functional.linear+inductor:qk_norm"),
                             ("moe_gating_routing_topk", "inductor:softmax_topk")):
                sh = ATTN if op.startswith("attn_kv") else MOE if op.startswith("moe") else LINEAR
                b = w.build(op, sh)
                b.fn()
                self.assertEqual(b.source, want, op)
            if restore:
                self.assertIn("_fused_add_rms_norm_native", compiled)
            # A compile that fails falls back to plain PyTorch, labelled so.
            w.compiled_fns["silu_and_mul"] = lambda *a: (_ for _ in ()).throw(RuntimeError("inductor broke"))
            self.assertEqual(w.build("mlp_act", LINEAR).source, "torch:silu_and_mul")
        finally:
            for n in restore:
                delattr(torch, n)

    def test_compiled_refused_without_torch_compile(self):
        if hasattr(torch, "compile"):
            self.skipTest("this PyTorch has torch.compile")  # the refusal only exists without it
        with self.assertRaisesRegex(RuntimeError, "needs torch.compile"):
            fw.Worker(torch, "cpu", 1, "compiled")

    def test_vllm_refused_without_vllm(self):
        with self.assertRaisesRegex(RuntimeError, "vLLM does not import"):
            fw.Worker(torch, "cpu", 1, "vllm")

    def test_graph_timing_needs_cuda(self):
        w = fw.Worker(torch, "cpu", 1, "eager")
        with self.assertRaisesRegex(RuntimeError, "cuda_graph needs a CUDA device"):
            w.handle({"id": "x", "op": "add", "shape": {"width": 4, "tokens": 2}, "timing": "cuda_graph"})


class VLLMDispatch(unittest.TestCase):
    def tearDown(self):
        no_vllm()
        os.environ.pop("FAKE_VLLM_LOG", None)

    def test_every_op_runs_vllms_kernel(self):
        fake_vllm()
        log = tempfile.NamedTemporaryFile(delete=False).name
        os.environ["FAKE_VLLM_LOG"] = log
        w = fw.Worker(torch, "cpu", 1, "auto")
        self.assertEqual(w.mode, "vllm")
        self.assertEqual(w.vllm.missing(), [])
        want = {"input_layernorm": "vllm._C.fused_add_rms_norm", "post_attention_layernorm": "vllm._C.fused_add_rms_norm",
                "mlp_act": "vllm._C.silu_and_mul", "attn_rope": "vllm._C.rotary_embedding",
                "attn_pre_proj": "torch.nn.functional.linear+vllm._C.rms_norm", "attn_post_proj": "torch.nn.functional.linear",
                "attn_kv_cache_save": "vllm._C_cache_ops.reshape_and_cache_flash",
                "attn_prefill": "vllm_flash_attn_fa3", "attn_decode": "vllm_flash_attn_fa3",
                "attn_input_reshape": "torch.Tensor.view", "attn_output_reshape": "torch.Tensor.view",
                "moe_gating_routing_topk": "vllm.fused_topk", "moe_shuffling": "vllm.moe_align_block_size",
                "moe_grouped_gemm": "vllm.fused_experts"}
        for op, sh in OPS:
            b = w.build(op, sh)
            b.fn()
            if op in want:
                self.assertEqual(b.source, want[op], op)
        # A domain-edge shape: fewer routed picks than tokens x top-k, every
        # expert local (EP1); the other picks go to experts of no rank.
        edge = w.build("moe_grouped_gemm", dict(MOE, expert_counts=[1] + [0] * 7, tokens=1))
        edge.fn()
        self.assertEqual(edge.source, "vllm.fused_experts")
        fp8 = w.build("mlp_up_proj", dict(LINEAR, elem_bytes=1))
        fp8.fn()
        self.assertEqual(fp8.source, "vllm._custom_ops.cutlass_scaled_mm")
        with open(log) as f:
            called = set(f.read().split())
        for name in ("fused_add_rms_norm", "rms_norm", "silu_and_mul", "rotary_embedding", "reshape_and_cache_flash",
                     "flash_attn_varlen_func", "fused_topk", "moe_align_block_size", "fused_experts",
                     "scaled_fp8_quant", "cutlass_scaled_mm"):
            self.assertIn(name, called)

    def test_vllm_attention_is_right(self):
        """The paged call the worker builds computes causal attention of
        the batch (the double computes it from the block table)."""
        fake_vllm()
        w = fw.Worker(torch, "cpu", 1, "vllm")
        b = w.build("attn_prefill", ATTN)
        out = b.fn()
        self.assertEqual(tuple(out.shape), (8, 4, 16))
        self.assertTrue(torch.isfinite(out).all())

    def test_missing_op_is_reported_and_falls_back(self):
        fake_vllm("fused_add_rms_norm,fused_experts")
        w = fw.Worker(torch, "cpu", 1, "vllm")
        self.assertEqual(w.vllm.missing(), ["fused_add_rms_norm", "fused_experts"])
        self.assertTrue(w.build("input_layernorm", LINEAR).source.startswith(("torch:", "inductor:")))
        self.assertEqual(w.build("moe_grouped_gemm", MOE).source, "torch:bmm_padded_experts")
        self.assertEqual(w.build("attn_rope", LINEAR).source, "vllm._C.rotary_embedding")
        self.assertIn("vllm:fused_add_rms_norm", w.warned)


class Protocol(unittest.TestCase):
    def run_worker(self, lines, env=None, *args):
        e = dict(os.environ, **(env or {}))
        p = subprocess.run([sys.executable, os.path.join(HERE, "ftk_worker.py"), "--device", "cpu", "--threads", "1"] + list(args),
                           input="".join(json.dumps(l) + "\n" for l in lines), capture_output=True, text=True, env=e, timeout=300)
        return [json.loads(l) for l in p.stdout.splitlines()], p.stderr

    def test_hello_answers_and_errors(self):
        out, _ = self.run_worker([
            {"id": "a", "family": "linear_op", "op": "mlp_act", "shape": dict(LINEAR), "warmup": 1, "repeats": 3, "timing": "cpu"},
            {"id": "b", "family": "linear_op", "op": "nope", "shape": {}, "timing": "cpu"},
            {"id": "c", "family": "linear_op", "op": "add", "shape": {"width": 8, "tokens": 4}, "timing": "cuda_event"},
        ])
        hello, a, b, c = out
        self.assertEqual(hello["hello"], "ftk-worker")
        self.assertIn(hello["kernels"], ("eager", "compiled"))
        self.assertTrue(a["ok"] and a["stats"]["count"] == 3 and a["kernel_source"].endswith("silu_and_mul"))
        self.assertFalse(b["ok"])
        self.assertIn("unknown operator", b["error"])
        self.assertFalse(c["ok"])
        self.assertIn("needs a CUDA device", c["error"])

    def test_hello_lists_missing_vllm_ops(self):
        env = {"PYTHONPATH": FAKE, "FAKE_VLLM_DROP": "rotary_embedding"}
        out, err = self.run_worker([{"id": "r", "family": "linear_op", "op": "attn_rope", "shape": dict(LINEAR), "repeats": 2, "timing": "cpu"}], env)
        hello, r = out
        self.assertEqual(hello["kernels"], "vllm")
        self.assertEqual(hello["vllm_ops_missing"], ["rotary_embedding"])
        self.assertFalse(r["kernel_source"].startswith("vllm"))
        self.assertIn("vLLM has no rotary_embedding", err)

    def test_bad_kernels_flag(self):
        out, _ = self.run_worker([], {"PYTHONPATH": ""}, "--kernels", "vllm")
        self.assertFalse(out[0]["ok"])
        self.assertIn("vLLM does not import", out[0]["error"])


if __name__ == "__main__":
    unittest.main()
