package ingest

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// TestSendRecvCrossNodeKey ingests the Vidur H100 network folder: its
// send_recv rows with devices_per_node 1 cross nodes and must get their own
// predictor key (CrossNode), not collide with the intra-node rows
// (devices_per_node 2) of the same group size and message size.
func TestSendRecvCrossNodeKey(t *testing.T) {
	src := filepath.Join(profilesDir(t), "vidur-h100", "network-h100_dgx")
	dir := filepath.Join(t.TempDir(), "net")
	if _, err := Ingest([]string{src}, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Load(dir)
	if err != nil {
		t.Fatal(err)
	}

	// Count the rows independently, with encoding/csv.
	wantCross, wantIntra := 0, 0
	for _, r := range readRef(t, filepath.Join(src, "send_recv.csv")) {
		dpn, err := strconv.ParseFloat(r.cells["devices_per_node"], 64)
		if err != nil {
			t.Fatalf("send_recv.csv line %d: devices_per_node %q", r.line, r.cells["devices_per_node"])
		}
		if dpn == 1 {
			wantCross++
		} else {
			wantIntra++
		}
	}
	if wantCross == 0 || wantIntra == 0 {
		t.Fatalf("fixture changed: %d cross-node and %d intra-node send_recv rows", wantCross, wantIntra)
	}

	keys := map[bool]map[spec.OpKey]bool{false: {}, true: {}}
	sizes := map[bool]map[float64]bool{false: {}, true: {}}
	n := map[bool]int{}
	for _, s := range d.Samples {
		if s.Key.Op == spec.OpAllReduce && s.Key.CrossNode && s.Key.Workers < 2 {
			t.Errorf("%s: a group of one worker cannot cross nodes", s.Key)
		}
		if s.Key.Op != spec.OpSendRecv {
			continue
		}
		c := s.Key.CrossNode
		n[c]++
		keys[c][s.Key] = true
		sizes[c][s.Features[0]] = true
		if got := strings.Contains(s.Key.String(), " cross-node"); got != c {
			t.Errorf("%s: String shows cross-node %v, CrossNode is %v", s.Key, got, c)
		}
	}
	if n[true] != wantCross || n[false] != wantIntra {
		t.Errorf("send_recv samples: %d cross-node, %d intra-node; CSV rows with devices_per_node 1: %d, others: %d",
			n[true], n[false], wantCross, wantIntra)
	}
	for k := range keys[true] {
		if keys[false][k] {
			t.Errorf("key %s holds both cross-node and intra-node samples", k)
		}
	}
	shared := 0
	for sz := range sizes[true] {
		if sizes[false][sz] {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("no message size measured both cross- and intra-node: the test no longer shows the collision")
	}
	// Same size, different key: no longer duplicated shapes.
	for _, c := range d.Manifest.Conflicts {
		if strings.HasPrefix(c.Key, spec.OpSendRecv+"[") {
			t.Errorf("send_recv still conflicts: %s at %v", c.Key, c.Features)
		}
	}
}
