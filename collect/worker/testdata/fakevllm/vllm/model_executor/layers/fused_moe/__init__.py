"""Test double of vllm.model_executor.layers.fused_moe:
  fused_experts(hidden_states, w1, w2, topk_weights, topk_ids, inplace=False,
                activation="silu", ..., global_num_experts=-1, expert_map=None, ...)
      w1 [E, 2N, K], w2 [E, K, N] (vllm/model_executor/layers/fused_moe/fused_moe.py)
  fused_topk(hidden_states, gating_output, topk, renormalize, ...)
      -> (topk_weights, topk_ids, token_expert_indices)  (same file)"""
import torch

from vllm import _DROP, _called, _require


def fused_experts(hidden_states, w1, w2, topk_weights, topk_ids, inplace=False, activation="silu",
                  global_num_experts=-1, expert_map=None, **kw):
    _called("fused_experts")
    T, K = hidden_states.shape
    E, N2, K1 = w1.shape
    _require(K1 == K and w2.shape == (E, K, N2 // 2), "w1 [E, 2N, K], w2 [E, K, N]")
    _require(topk_ids.dtype in (torch.int32, torch.int64) and topk_ids.shape == topk_weights.shape and topk_ids.shape[0] == T,
             "topk_ids, topk_weights [tokens, top_k]")
    if expert_map is not None:
        _require(global_num_experts == expert_map.shape[0], "global_num_experts is expert_map's length")
    out = torch.zeros_like(hidden_states)
    for t in range(T):
        for j in range(topk_ids.shape[1]):
            e = int(topk_ids[t, j])
            if expert_map is not None:
                e = int(expert_map[e])
            if e < 0:
                continue
            h = w1[e] @ hidden_states[t]
            a = torch.nn.functional.silu(h[:N2 // 2]) * h[N2 // 2:]
            out[t] += topk_weights[t, j].to(out.dtype) * (w2[e] @ a)
    return out


def fused_topk(hidden_states, gating_output, topk, renormalize, **kw):
    _called("fused_topk")
    _require(gating_output.shape[0] == hidden_states.shape[0] and isinstance(renormalize, bool), "gating_output [tokens, experts]")
    w, ids = torch.topk(torch.softmax(gating_output.float(), -1), topk, -1)
    if renormalize:
        w = w / w.sum(-1, keepdim=True)
    return w, ids.to(torch.int32), torch.zeros_like(ids, dtype=torch.int32)


for _n in _DROP:
    globals().pop(_n, None)
