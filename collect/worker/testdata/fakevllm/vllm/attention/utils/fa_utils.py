"""Test double of vllm/attention/utils/fa_utils.py: get_flash_attn_version()
names the FlashAttention version vLLM runs on the device (3 on Hopper)."""


def get_flash_attn_version(requires_alibi=False):
    return 3
