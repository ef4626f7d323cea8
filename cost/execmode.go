package cost

import (
	"fmt"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// defaultMaxCaptureSize is vLLM's cap on the captured batch size.
const defaultMaxCaptureSize = 512

// captureSizes is vLLM's default list of CUDA graph batch sizes: 1, 2, 4,
// then every multiple of 8 up to the largest.
type captureSizes struct{ max int }

// MaxCaptureSize resolves max_cudagraph_capture_size (requested; 0 for
// vLLM's default, min(2 x max_num_seqs, 512)); it never exceeds the token
// budget.
func MaxCaptureSize(requested int, l spec.EngineLimits) int {
	return MaxCaptureSizeSpec(requested, l, 0)
}

// MaxCaptureSizeSpec is MaxCaptureSize for a run with k speculative tokens:
// vLLM's default counts the decode query length, min(2 x max_num_seqs x
// (1 + k), 512) (vllm/config/vllm.py, VllmConfig._set_cudagraph_sizes:
// decode_query_len = 1 + num_speculative_tokens).
func MaxCaptureSizeSpec(requested int, l spec.EngineLimits, k int) int {
	n := requested
	if n == 0 {
		n = min(2*l.MaxNumSeqs*(1+k), defaultMaxCaptureSize)
	}
	return min(n, l.MaxNumBatchedTokens)
}

// largest is the largest capture size: the largest of 1, 2, 4, 8, 16, ...
// not above max.
func (c captureSizes) largest() int {
	switch {
	case c.max >= 8:
		return c.max / 8 * 8
	case c.max >= 4:
		return 4
	case c.max >= 2:
		return 2
	}
	return max(c.max, 0)
}

// pad returns the captured size a batch of n runs as, or 0 when n is
// larger than every capture size.
func (c captureSizes) pad(n int) int {
	switch {
	case n > c.largest():
		return 0
	case n <= 2:
		return n
	case n <= 4:
		return 4
	}
	return (n + 7) / 8 * 8
}

// resolveExecutionMode picks the execution mode of a run: the one asked
// for, checked against the op times' measurement type, or by default CUDA
// graphs (vLLM's default) when op times are KERNEL_ONLY and eager when
// they are CUDA_EVENT (those times include eager launch gaps, so they
// cannot price a graph replay).
func resolveExecutionMode(asked, measurement string) (string, error) {
	if asked == "" {
		if measurement == spec.CUDAEvent {
			return runresult.ExecEager, nil
		}
		return runresult.ExecCUDAGraph, nil
	}
	if asked != runresult.ExecEager && measurement == spec.CUDAEvent {
		return "", fmt.Errorf("simulate: execution mode %s needs KERNEL_ONLY op times, and the bundle holds CUDA_EVENT predictors (eager timings with launch gaps): fit a bundle on KERNEL_ONLY profiles (fit --measurement KERNEL_ONLY) or run --execution-mode eager", asked)
	}
	return asked, nil
}
