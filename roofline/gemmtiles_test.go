package roofline

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestGEMMTileFillsOneWaveThenWidest(t *testing.T) {
	for _, tc := range []struct {
		tokens float64
		n      int
		want   GEMMTile
	}{
		{384, 2048, GEMMTile{64, 128}},   // 6 x 16 = 96 tiles
		{385, 2048, GEMMTile{128, 128}},  // 64 x 128 would be 112
		{768, 2048, GEMMTile{128, 128}},  // 6 x 16
		{769, 2048, GEMMTile{128, 256}},  // one wave of 7 x 8
		{4096, 2048, GEMMTile{128, 256}}, // no tile fits one wave: the widest
		{320, 2560, GEMMTile{64, 128}},
		{640, 2560, GEMMTile{128, 128}},
		{1, 1280, GEMMTile{64, 128}},
		{1, 37888, GEMMTile{64, 128}},   // 296 tiles of any width: a decode GEMM keeps 64 rows
		{100, 37888, GEMMTile{64, 128}}, // fewer tokens than 128 rows
		{128, 37888, GEMMTile{128, 256}},
	} {
		if got := gemmTile(ampereGEMMTiles, tc.tokens, tc.n, 108); got != tc.want {
			t.Errorf("%v tokens x %d columns on 108 SMs: tile %v, want %v", tc.tokens, tc.n, got, tc.want)
		}
	}
	// Without a table: Hopper's rule (skinnygemm.go).
	if got := gemmTile(nil, 4096, 2048, 132); got != (GEMMTile{128, 128}) {
		t.Errorf("no table: %v, want 128 x 128", got)
	}
}

// The A800's kernel-traced output projections from 856 tokens on run one,
// two and three waves of 128 x 256 tiles (gemmtiles.go): 69-71, 135-137,
// 201-203 us at K = 2,048. With 128 x 128 tiles these rows were priced
// 12% off on average and up to 28.5% (three waves where there are two).
func TestAmpereProjectionWaves(t *testing.T) {
	d, err := LookupDevice("a800")
	if err != nil {
		t.Fatal(err)
	}
	var sum, worst float64
	n := 0
	for _, p := range loadRealPoints(t) {
		if !strings.Contains(p.profile, "a800") || p.meas != spec.KernelOnly || p.op.Name != spec.OpAttnPostProj || p.x[0] < 856 {
			continue
		}
		ape := math.Abs(predictPoint(d, p, nil)-p.ms) / p.ms
		sum += ape
		worst = math.Max(worst, ape)
		n++
	}
	if n < 200 {
		t.Fatalf("%d A800 kernel-traced output projection rows from 856 tokens, want the file's 300", n)
	}
	if mape := 100 * sum / float64(n); mape > 7 || worst > 0.15 {
		t.Errorf("A800 output projections from 856 tokens: MAPE %.1f%%, worst %.1f%%; want <= 7%% and <= 15%%", mape, 100*worst)
	}
}
