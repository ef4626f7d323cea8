package roofline

import "math"

// GEMM output tiles picked by shape (Curves.GEMMTiles). On the A800
// (Frontier's Qwen3-30B-A3B kernel-traced projection rows, TP2 and TP4,
// 1-4,096 tokens) a GEMM's time is flat over token ranges and jumps where
// the grid of output tiles passes a whole wave of the 108 SMs, for three
// tiles (token rows x output columns), each used while its grid fits one
// wave and the smaller one does not:
//   - 64 x 128 up to 384 tokens at 2,048 columns (6 x 16 = 96 tiles), 320
//     at 2,560 (5 x 20 = 100), 640 at 1,280 (10 x 10 = 100);
//   - 128 x 128 up to 768 tokens at 2,048 columns, 640 at 2,560, 1,280
//     at 1,280;
//   - 128 x 256 beyond, in as many waves as it takes: the output
//     projection at K = 2,048 takes 39-40 us from 856 to 1,648 tokens (one
//     wave of 13 x 8 tiles), 135-137 us to 3,424 (two), 201-203 us beyond
//     (three), and the QKV projection at 2,560 columns jumps at 1,280 and
//     2,688 tokens (10 and 21 rows of tiles x 10).
// With one efficiency the plateaus fit within ~5%: the per-tile time is
// the tile's FLOPs at the SM's share of the peak, plus the launch floor.
// 128 x 256 x 64 (3 stages) is CUTLASS's default thread-block tile for
// 16-bit tensor-op GEMMs on sm_80 (include/cutlass/gemm/device/
// default_gemm_configuration.h, DefaultGemmConfiguration<OpClassTensorOp,
// Sm80, ...>); PyTorch calls cuBLAS with the weight as its first operand,
// so cuBLAS's 256 x 128 tile puts the 256 on the output columns.

// GEMMTile is one output tile shape: token rows by output columns.
type GEMMTile struct{ Rows, Cols float64 }

// ampereGEMMTiles are the tiles cuBLAS picks from on Ampere, smallest first.
var ampereGEMMTiles = []GEMMTile{{64, 128}, {128, 128}, {128, 256}}

// gemmTile returns the output tile of a GEMM over tokens rows and n
// columns: with tiles set (smallest first), the first whose grid fits one
// wave of the SMs, else the largest with no more rows than there are
// tokens (the first if none: a decode GEMM over many columns pads its
// few rows to the smallest tile, not to 128); without, 128 x 128 (64
// rows up to smallTileMaxRows tokens, skinnygemm.go).
func gemmTile(tiles []GEMMTile, tokens float64, n int, sms float64) GEMMTile {
	if len(tiles) == 0 {
		return GEMMTile{Rows: gemmTileRows(tokens), Cols: 128}
	}
	for _, t := range tiles {
		if math.Ceil(tokens/t.Rows)*math.Ceil(float64(n)/t.Cols) <= sms {
			return t
		}
	}
	pick := tiles[0]
	for _, t := range tiles {
		if t.Rows <= tokens {
			pick = t
		}
	}
	return pick
}
