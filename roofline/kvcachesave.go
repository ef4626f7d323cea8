package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// KVCacheSave prices the KV-cache write (attn_kv_cache_save) as vLLM's
// reshape_and_cache_flash runs it; its FLASH_ATTN and FLASHINFER backends
// call it before the attention kernel (vllm csrc/cache_kernels.cu): one
// thread block a token of min(KV heads x head dim, 512) threads
// (grid(num_tokens), block(std::min(num_heads * head_size, 512)), num_heads
// the new K's and V's heads), which copies the token's K and then its V
// in 16-byte vectors (vectorize_with_alignment<8>). It moves the new
// tokens' K and V only, read in the model's 16-bit dtype and written in
// the cache's: spec's Work for the op counts the query heads too (it
// shares the form of the reshapes around attention).
//
// A block is a few dependent memory accesses, so the kernel is bound by
// how many blocks the SMs hold at once (2,048 threads and 32 blocks a SM):
// one KV head of 128 holds 16 blocks a SM, four or more KV heads 4. The
// time is the copy class's floor plus the longer of the bytes at the copy
// class's bandwidth and tokens / resident blocks x 2 x BlockUs (K and V
// each a vector loop; a block retires and the SM refills continuously).
// AIConfigurator's H100 context rows time this kernel with the attention
// (cost.AttentionRowMs): 64 sequences of 512 tokens with 4 query heads
// take 120 us over one KV head, 194 over two and 327 over four, where the
// attention's work is the same; eight KV heads 415, the same blocks a SM
// as four. It is priced so at head dims FlashAttention-3 runs (at most
// 256), where it is fitted: the 0.24.0 FA4 rows (head dim 512, 1-2 KV
// heads, the same 512-thread blocks as four KV heads of 128) read about
// 30% under the block term (128 sequences of 64 tokens, one query head:
// 64 us with the attention, where the term gives 58 us alone), which
// this model does not explain; they keep the copy class's curve.
type KVCacheSave struct {
	// BlockUs is one of a block's two vector loops (its K, its V) at
	// the loaded latency of the blocks the SMs hold.
	BlockUs float64
	// BlockUsFrom024 is BlockUs as vLLM 0.24.0's rows time the write,
	// where Kernels.Attention names that release's FA3 (AttentionFA3);
	// 0: BlockUs. Its rows
	// step less from one resident block count to the next: 64 x 512
	// tokens of 4 query heads take 107, 142 and 250 us over 1, 2 and 4
	// KV heads of 128 (0.14.0's: 120, 193, 327).
	BlockUsFrom024 float64
}

// hopperKVCacheSave is fitted on AIConfigurator's vLLM 0.14.0 and 0.24.0
// H100 SXM context attention rows (kernel sources vllm_flash_attn and
// vllm_flash_attn_fa3, BF16 and FP8 caches), each jointly with its
// version's FA3 prefill terms, every fifth row held out:
// cost.TestFA3AttentionRefit.
var hopperKVCacheSave = KVCacheSave{BlockUs: 2.006, BlockUsFrom024: 1.464}

// kvCacheSaveThreadsMost is the most threads of a reshape_and_cache_flash
// block.
const kvCacheSaveThreadsMost = 512

// kvCacheSaveVector is the elements one thread copies at a time (16 bytes
// of a 16-bit dtype: vectorize_with_alignment<8>).
const kvCacheSaveVector = 8

// maxBlocksPerSM is the resident thread blocks of one SM on Ampere and
// Hopper (CUDA C++ Programming Guide, "Compute Capabilities").
const maxBlocksPerSM = 32

// us is the kernel time, in microseconds, of writing x[0] tokens' K and V
// of op o into the cache on device d, whose copy class's curve is c, in
// the era of attention kernel attention (Kernels.Attention).
func (s *KVCacheSave) us(o *spec.Op, x []float64, c Curve, d *Device, attention string) float64 {
	elems := float64(o.KVHeads * o.HeadDim)
	bytes := x[0] * 2 * elems * (2 + float64(o.ElemBytes))
	memUs := bytes / (d.HBMGBps * 1e3 * c.MemEff)
	threads := math.Min(elems, kvCacheSaveThreadsMost)
	loops := 2 * math.Ceil(elems/kvCacheSaveVector/threads)
	resident := float64(d.SMs) * math.Min(math.Floor(maxThreadsPerSM/threads), maxBlocksPerSM)
	block := s.BlockUs
	if attention == AttentionFA3 {
		block = nonZero(s.BlockUsFrom024, block)
	}
	blockUs := x[0] / resident * loops * block
	return float64(o.Kernels)*c.FloorUs + math.Max(memUs, blockUs)
}
