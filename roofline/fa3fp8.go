package roofline

// FA3's tiles with an FP8 KV cache on sm_90. vLLM passes FA3 an e4m3
// query, key and value (FlashAttentionImpl.forward views the FP8 cache as
// float8_e4m3fn and hands the layer's scales over as q/k/v_descale), so
// FA3 runs its 1-byte kernels, whose tiles differ from the 16-bit ones
// (vllm-project/flash-attention hopper/tile_size.h tile_size_fwd_sm90,
// element_size 1, over a paged cache without TMA, causal, no window):
//
//   - one MMA warpgroup (hopper/heuristics.h use_one_mma_wg: head dim 64
//     or 128, at most 64 packed query rows): 64 x 128 at head dim 64,
//     64 x 96 at 128 (PR #96, September 2025, "optimize decoding
//     performance for headdim 128 fp8");
//   - otherwise, before two-level accumulation (the tiles of vLLM
//     0.14.0's pin): 192 x 160 at head dim 64, 192 x 128 at 96,
//     128 x 160 at 128 and 192, 128 x 128 at 256;
//   - with two-level accumulation (PR #125, March 2026: an FP32
//     accumulator beside the FP8 MMA's, smaller tiles for the register
//     pressure; on unless FLASHATTENTION_DISABLE_FP8_TWO_LEVEL_ACCUMULATION,
//     which vLLM's build does not set; in the pins of vLLM 0.24.0's era,
//     April-June 2026): 192 x 128 at head dim 64, 128 x 128 at 96,
//     128 x 192 at 128, 128 x 96 at 192, 128 x 128 at 256.

// fa3TileFP8 is fa3Tile for an FP8 cache: query rows by keys an
// iteration; twoLevel picks the two-level accumulation tiles.
func fa3TileFP8(hd int, packedRows float64, oneWG, twoLevel bool) (rows, keys float64) {
	if oneWG && packedRows <= 64 && (hd == 64 || hd == 128) {
		return 64, fa3DecodeKeysFP8(hd, twoLevel)
	}
	if twoLevel {
		switch {
		case hd <= 64:
			return 192, 128
		case hd <= 96:
			return 128, 128
		case hd <= 128:
			return 128, 192
		case hd <= 192:
			return 128, 96
		}
		return 128, 128
	}
	switch {
	case hd <= 64:
		return 192, 160
	case hd <= 96:
		return 192, 128
	case hd <= 192:
		return 128, 160
	}
	return 128, 128
}

// fa3DecodeKeysFP8 is fa3DecodeKeys for an FP8 cache: the one-warpgroup
// tile's keys at head dims 64 and 128, else the prefill tile's.
func fa3DecodeKeysFP8(hd int, twoLevel bool) float64 {
	switch {
	case hd <= 64:
		return 128
	case hd <= 128:
		return 96
	}
	_, keys := fa3TileFP8(hd, 128, false, twoLevel)
	return keys
}
