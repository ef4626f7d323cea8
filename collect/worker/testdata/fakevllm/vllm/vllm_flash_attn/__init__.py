"""Test double of vllm.vllm_flash_attn (vLLM's FlashAttention build).
flash_attn_varlen_func(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k,
cu_seqlens_k=None, seqused_k=None, ..., softmax_scale=None, causal=False,
..., block_table=None, ..., out=None, ...): vllm/vllm_flash_attn/
flash_attn_interface.py; called on the paged cache as vLLM's
FlashAttentionImpl does (vllm/v1/attention/backends/flash_attn.py)."""
import math

import torch

from vllm import _DROP, _called, _require


def flash_attn_varlen_func(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None,
                           softmax_scale=None, causal=False, block_table=None, out=None, **kw):
    _called("flash_attn_varlen_func")
    _require(q.dim() == 3 and k.dim() == 4 and v.shape == k.shape, "q [tokens, heads, head], k/v caches [blocks, block_size, kv_heads, head]")
    _require(block_table is not None and block_table.dtype == torch.int32 and seqused_k is not None, "paged: block_table int32 and seqused_k")
    _require(cu_seqlens_q.dtype == torch.int32 and cu_seqlens_q.shape[0] == block_table.shape[0] + 1, "cu_seqlens_q int32 [seqs + 1]")
    bs, g = k.shape[1], q.shape[1] // k.shape[2]
    scale = softmax_scale or 1 / math.sqrt(q.shape[-1])
    res = out if out is not None else torch.empty_like(q)
    for i in range(block_table.shape[0]):
        a, b, n = int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1]), int(seqused_k[i])
        _require(b - a <= max_seqlen_q and n <= max_seqlen_k, "max_seqlen_q / max_seqlen_k below the batch's")
        blocks = block_table[i, :(n + bs - 1) // bs].long()
        kk = k[blocks].reshape(-1, k.shape[2], k.shape[3])[:n].repeat_interleave(g, 1)
        vv = v[blocks].reshape(-1, v.shape[2], v.shape[3])[:n].repeat_interleave(g, 1)
        s = torch.einsum("qhd,khd->hqk", q[a:b].float(), kk.float()) * scale
        if causal:
            qpos = torch.arange(n - (b - a), n)[:, None]
            s = s.masked_fill(torch.arange(n)[None, :] > qpos, float("-inf"))
        res[a:b] = torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), vv.float()).to(q.dtype)
    return res


if "flash_attn_varlen_func" in _DROP:
    del flash_attn_varlen_func
