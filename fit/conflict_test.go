package fit

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

func TestResolveConflicts(t *testing.T) {
	m, _ := spec.LookupModel("qwen3-30b-a3b")
	k := spec.OpKey{Op: spec.OpAttnPrefill, Measurement: spec.CUDAEvent, TP: 4}
	op, note := bundle.OpShape(m, k)
	si := shapeInfo{key: k, op: op, note: note, names: spec.OpFeatures(k.Op)}
	truth := func(kv, c float64) float64 { return 0.01 + 1e-7*c*(kv+c/2) + 1e-5*c }
	var rows []Row
	line := 1
	add := func(group string, kv, c, factor float64) {
		line++
		rows = append(rows, Row{X: []float64{kv, c}, TimeMs: truth(kv, c) * factor, Group: group, Source: "a.csv", Line: line})
	}
	for c := 32.0; c <= 2048; c += 32 {
		add(bundle.PrimaryGroup, 0, c, 1)
		add(bundle.PrimaryGroup, 1024, c, 1.02) // a replicate within the ratio
		if c <= 1024 {
			add(bundle.PrimaryGroup, 0, c, 1.8) // a second sweep, 1.8x slower
		}
	}
	for c := 64.0; c <= 1024; c += 64 {
		add(groupMixed, 512, c, 1.9) // batched prefill, slower than its equivalent
		add("consistent", 0, c+16, 1.05)
	}
	add("outside", 1e6, 1e6, 1) // nothing to check it against
	kept, dropped, err := resolveConflicts(si, rows, 1)
	if err != nil {
		t.Fatal(err)
	}
	byReason := map[string]bundle.Dropped{}
	for _, d := range dropped {
		byReason[d.Reason+"/"+d.Group] = d
		t.Log(d)
	}
	if d, ok := byReason[bundle.DropDuplicate+"/"+bundle.PrimaryGroup]; !ok || d.Rows != 32 || math.Abs(d.Ratio-1.8) > 1e-9 {
		t.Errorf("slow duplicates: %+v", d)
	}
	if d, ok := byReason[bundle.DropGroup+"/"+groupMixed]; !ok || d.Rows != 16 || d.Ratio < 1.5 {
		t.Errorf("inconsistent group: %+v", d)
	}
	if d, ok := byReason[bundle.DropGroup+"/outside"]; !ok || !math.IsNaN(d.Ratio) || !strings.Contains(d.String(), "no row inside") {
		t.Errorf("unverifiable group: %+v", d)
	}
	if _, ok := byReason[bundle.DropGroup+"/consistent"]; ok {
		t.Error("a consistent group was dropped")
	}
	if want := 64 + 64 + 16; len(kept) != want {
		t.Errorf("kept %d rows, want %d", len(kept), want)
	}
	for _, r := range kept {
		if r.TimeMs > 1.25*truth(r.X[0], r.X[1]) {
			t.Fatalf("kept a slow row %+v", r)
		}
	}
}

const groupMixed = "mixed"
