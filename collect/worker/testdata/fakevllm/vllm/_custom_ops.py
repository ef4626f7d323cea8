"""Test double of vllm/_custom_ops.py (vLLM's Python wrappers of its
torch.ops._C / _C_cache_ops kernels). Signatures from vLLM's source:
  rms_norm(out, input, weight, epsilon)                        vllm/_custom_ops.py
  fused_add_rms_norm(input, residual, weight, epsilon)         vllm/_custom_ops.py (in place)
  rotary_embedding(positions, query, key, head_size,
                   cos_sin_cache, is_neox, rope_dim_offset=0,
                   inverse=False)                              vllm/_custom_ops.py (in place)
  reshape_and_cache_flash(key, value, key_cache, value_cache,
                   slot_mapping, kv_cache_dtype, k_scale, v_scale)
                                                               vllm/_custom_ops.py, csrc/cache_kernels.cu
  scaled_fp8_quant(input, scale=None, ...) -> (output, scale)  vllm/_custom_ops.py
  cutlass_scaled_mm(a, b, scale_a, scale_b, out_dtype, bias=None)
                                                               vllm/_custom_ops.py
Importing it registers torch.ops._C.silu_and_mul(Tensor! out, Tensor input)
(csrc/torch_bindings.cpp), as importing vllm._C does."""
import torch

from vllm import _DROP, _called, _require

# One registration a process (tests import this module again after
# dropping it from sys.modules).
if "silu_and_mul" not in _DROP and not hasattr(torch, "_fake_vllm_lib"):
    _lib = torch._fake_vllm_lib = torch.library.Library("_C", "DEF")
    _lib.define("silu_and_mul(Tensor(a!) out, Tensor input) -> ()")

    def _silu_and_mul(out, x):
        _called("silu_and_mul")
        d = x.shape[-1] // 2
        _require(out.shape[-1] == d and out.shape[:-1] == x.shape[:-1], "silu_and_mul: out must be [..., d] of input [..., 2d]")
        out.copy_(torch.nn.functional.silu(x[..., :d]) * x[..., d:])
    _lib.impl("silu_and_mul", _silu_and_mul, "CPU")


def _norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rms_norm(out, input, weight, epsilon):
    _called("rms_norm")
    _require(out.shape == input.shape and weight.shape == (input.shape[-1],) and isinstance(epsilon, float),
             "rms_norm(out, input, weight, epsilon): out like input, weight [hidden], epsilon a float")
    out.copy_(_norm(input, weight, epsilon))


def fused_add_rms_norm(input, residual, weight, epsilon):
    _called("fused_add_rms_norm")
    _require(residual.shape == input.shape and weight.shape == (input.shape[-1],) and isinstance(epsilon, float),
             "fused_add_rms_norm(input, residual, weight, epsilon): residual like input")
    residual.add_(input)
    input.copy_(_norm(residual, weight, epsilon))


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox, rope_dim_offset=0, inverse=False):
    _called("rotary_embedding")
    T = positions.shape[0]
    _require(positions.dtype == torch.int64 and positions.dim() == 1, "rotary_embedding: positions int64 [tokens]")
    _require(query.shape[0] == T and query.shape[-1] % head_size == 0, "rotary_embedding: query [tokens, heads * head_size]")
    _require(key is None or (key.shape[0] == T and key.shape[-1] % head_size == 0), "rotary_embedding: key [tokens, kv_heads * head_size]")
    _require(cos_sin_cache.dim() == 2 and cos_sin_cache.shape[1] <= head_size, "rotary_embedding: cos_sin_cache [max_position, rot_dim]")
    _require(isinstance(is_neox, bool), "rotary_embedding: is_neox a bool")
    cs = cos_sin_cache.index_select(0, positions)
    half = cs.shape[-1] // 2
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    for t in (query, key):
        v = t.view(T, -1, head_size)
        a, b = v[..., :half].clone(), v[..., half:2 * half].clone()
        v[..., :half] = a * cos - b * sin
        v[..., half:2 * half] = b * cos + a * sin


def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    _called("reshape_and_cache_flash")
    _require(key.dim() == 3 and value.shape == key.shape, "reshape_and_cache_flash: key, value [tokens, kv_heads, head_size]")
    _require(key_cache.dim() == 4 and key_cache.shape[2:] == key.shape[1:] and value_cache.shape == key_cache.shape,
             "reshape_and_cache_flash: caches [blocks, block_size, kv_heads, head_size]")
    _require(slot_mapping.dtype == torch.int64 and slot_mapping.shape == (key.shape[0],), "reshape_and_cache_flash: slot_mapping int64 [tokens]")
    _require(isinstance(kv_cache_dtype, str), "reshape_and_cache_flash: kv_cache_dtype a string ('auto')")
    _require(torch.is_tensor(k_scale) and torch.is_tensor(v_scale), "reshape_and_cache_flash: k_scale, v_scale tensors")
    key_cache.view(-1, *key.shape[1:]).index_copy_(0, slot_mapping, key)
    value_cache.view(-1, *value.shape[1:]).index_copy_(0, slot_mapping, value)


def scaled_fp8_quant(input, scale=None, num_token_padding=None, scale_ub=None, use_per_token_if_dynamic=False):
    _called("scaled_fp8_quant")
    s = input.abs().max().float().clamp(min=1e-12) / 448.0
    return (input / s).clamp(-448, 448), s.reshape(1)


def cutlass_scaled_mm(a, b, scale_a, scale_b, out_dtype, bias=None):
    _called("cutlass_scaled_mm")
    _require(a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0], "cutlass_scaled_mm: a [m, k], b [k, n]")
    _require(b.stride(0) == 1, "cutlass_scaled_mm: b column-major (a [n, k] weight transposed)")
    return (torch.mm(a.float(), b.float()) * scale_a * scale_b).to(out_dtype)


for _n in _DROP:
    globals().pop(_n, None)
