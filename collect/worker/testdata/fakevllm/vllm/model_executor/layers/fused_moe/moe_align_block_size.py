"""Test double of vllm/model_executor/layers/fused_moe/moe_align_block_size.py:
moe_align_block_size(topk_ids, block_size, num_experts, expert_map=None, ...)
-> (sorted_token_ids, expert_ids, num_tokens_post_pad)."""
import torch

from vllm import _DROP, _called, _require


def moe_align_block_size(topk_ids, block_size, num_experts, expert_map=None, **kw):
    _called("moe_align_block_size")
    _require(topk_ids.dtype == torch.int32 and topk_ids.dim() == 2, "topk_ids int32 [tokens, top_k]")
    _require(isinstance(block_size, int) and isinstance(num_experts, int), "block_size, num_experts ints")
    flat = topk_ids.flatten().long()
    order = torch.sort(flat, stable=True)[1]
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    return order.to(torch.int32), torch.repeat_interleave(torch.arange(num_experts), padded // block_size).to(torch.int32), padded.sum().reshape(1)


if "moe_align_block_size" in _DROP:
    del moe_align_block_size
