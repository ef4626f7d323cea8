package dataset

import (
	"slices"

	"github.com/ftk-dev/ftk/spec"
)

// MeasuredAt is what inputs were measured at, as Manifest.MeasuredAt and
// Manifest.BlockSizes record it: each engine limit the largest any input
// records (nil when none does), and every block size of the inputs.
func MeasuredAt(inputs []Input) (*spec.EngineLimits, []int) {
	var out *spec.EngineLimits
	var blocks []int
	for _, in := range inputs {
		for _, b := range in.BlockSizes {
			if !slices.Contains(blocks, b) {
				blocks = append(blocks, b)
			}
		}
		l := in.EngineLimits
		if l == nil {
			continue
		}
		if out == nil {
			out = &spec.EngineLimits{}
		}
		out.MaxNumBatchedTokens = max(out.MaxNumBatchedTokens, l.MaxNumBatchedTokens)
		out.MaxNumSeqs = max(out.MaxNumSeqs, l.MaxNumSeqs)
		out.MaxModelLen = max(out.MaxModelLen, l.MaxModelLen)
		out.BlockSize = max(out.BlockSize, l.BlockSize)
		if l.BlockSize > 0 && !slices.Contains(blocks, l.BlockSize) {
			blocks = append(blocks, l.BlockSize)
		}
	}
	slices.Sort(blocks)
	return out, blocks
}
