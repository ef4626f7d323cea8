package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// A GEMM's thread blocks read their operands through the L2. Every block
// of a tiled GEMM walks the K dimension and, at each step, loads its
// tile's rows of the activations and its tile's columns of the weights:
// (rows + columns) x K elements a block in all, whatever the split of K.
// The weights are read from HBM once (the memory roof), but a weight
// column is read again by every row of tiles and an activation row by
// every column of tiles, so the L2 -> SM traffic is tiles x (rows +
// columns) x K x bytes, and the L2's rate bounds the main loop from below.
//
// Vidur's H100 rows (Llama-2-7B, output and down projections of 4,096
// columns at K = 512-11,008) show it: from 65 to 512 tokens a block's K
// step takes ~0.26 us with 32-64 blocks of 128 x 128 (the tile's MMA time
// at one SM's share of the peak) but ~0.5 us with 96-128 blocks, i.e.
// the blocks together draw ~8 TB/s of tile data in both cases, and the
// time grows with the blocks, not with the FLOPs (the compute roof
// priced them 20-35% too fast). The rate is fitted (Curve.TileL2GBps) on
// the profile rows, not read from a datasheet: NVIDIA publishes no L2
// bandwidth for the H100.
//
// Applied only while the grid of ftk's tiles fits one wave of the SMs:
// beyond it ftk's 128 x 128 tile is not what Hopper kernels run (larger
// tiles and pairs of SMs sharing one operand's loads through TMA
// multicast, CUTLASS's sm90 cluster shapes), which read far less per
// FLOP; with 256 x 256 worth of reuse there the bound never binds on the
// rows (checked: every profile's figures identical).

// tileL2Us is the time GEMM o over x[0] tokens takes to stream its tiles'
// operands through the L2 at c.TileL2GBps; 0 when the class has no such
// rate, o is not a dense GEMM, or its grid takes more than one wave.
func (r Roofline) tileL2Us(o *spec.Op, x []float64, c Curve) float64 {
	if c.TileL2GBps <= 0 || o.N <= 0 || o.K <= 0 || len(x) == 0 || ClassOf(o.Name) != ClassGEMM {
		return 0
	}
	sms := float64(r.Device.SMs)
	tile := gemmTile(r.Device.Curves.GEMMTiles, x[0], o.N, sms)
	tiles := math.Ceil(x[0]/tile.Rows) * math.Ceil(float64(o.N)/tile.Cols)
	if tiles > sms {
		return 0
	}
	traffic := tiles * (tile.Rows + tile.Cols) * float64(o.K*max(o.ElemBytes, 1))
	return traffic / (c.TileL2GBps * 1e9) * 1e6
}
