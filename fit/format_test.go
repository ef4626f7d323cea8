package fit

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/ftk-dev/ftk/bundle"
)

// TestBundleFormatAsDocumented reads a bundle the way the README tells a
// pyarrow user to (columns by name, node indices local to their tree, the
// JSON metadata) and checks that evaluating it by hand gives PredictMs.
func TestBundleFormatAsDocumented(t *testing.T) {
	b := smallBundle(t, 1)
	path := filepath.Join(t.TempDir(), "b.arrow")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	raw, _ := md.GetValue("ftk.bundle")
	var meta struct {
		Device      string `json:"device"`
		Measurement string `json:"measurement_type"`
		Predictors  []struct {
			Key struct {
				Op string `json:"op"`
				TP int    `json:"tp"`
			} `json:"key"`
			Target  string  `json:"target"`
			FloorMs float64 `json:"floor_ms"`
			Domain  []struct {
				Name string  `json:"name"`
				Min  float64 `json:"min"`
				Max  float64 `json:"max"`
			} `json:"domain"`
		} `json:"predictors"`
	}
	if err := json.Unmarshal([]byte(raw), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Device != "a800" || meta.Measurement != "CUDA_EVENT" || len(meta.Predictors) != 2 {
		t.Fatalf("metadata %+v", meta)
	}
	type row struct {
		feature     int32
		thr, value  float64
		left, right int32
	}
	trees := map[[2]int32][]row{} // (predictor, tree) -> nodes by local index
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) any { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		pred, tree, nd := col("predictor").(*array.Int32), col("tree").(*array.Int32), col("node").(*array.Int32)
		feat, thr, left, right, val := col("feature").(*array.Int32), col("threshold").(*array.Float64),
			col("left").(*array.Int32), col("right").(*array.Int32), col("value").(*array.Float64)
		for j := 0; j < int(rec.NumRows()); j++ {
			k := [2]int32{pred.Value(j), tree.Value(j)}
			if int(nd.Value(j)) != len(trees[k]) {
				t.Fatalf("node %d of %v out of order", nd.Value(j), k)
			}
			trees[k] = append(trees[k], row{feat.Value(j), thr.Value(j), val.Value(j), left.Value(j), right.Value(j)})
		}
	}
	for pi, pm := range meta.Predictors {
		p, _ := b.Predictor(b.Meta().Predictors[pi].Key)
		for _, x := range queries(p, 200) {
			var sum float64
			n := 0
			for tr := int32(0); ; tr++ {
				nodes, ok := trees[[2]int32{int32(pi), tr}]
				if !ok {
					break
				}
				i := 0
				for nodes[i].feature >= 0 {
					if x[nodes[i].feature] <= nodes[i].thr {
						i = int(nodes[i].left)
					} else {
						i = int(nodes[i].right)
					}
				}
				sum += nodes[i].value
				n++
			}
			r := sum / float64(n)
			var ms float64
			switch pm.Target {
			case bundle.TargetLogRatio:
				ms = math.Max(p.FallbackMs(x), pm.FloorMs) * math.Exp(r)
			case bundle.TargetLog:
				ms = math.Exp(r)
			default:
				ms = r
			}
			if got := p.PredictMs(x); math.Abs(got-ms) > 1e-9*ms {
				t.Fatalf("%s %v: by hand %g, PredictMs %g", pm.Key.Op, x, ms, got)
			}
		}
	}
}
