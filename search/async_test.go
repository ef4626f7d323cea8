package search

import (
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// With --vllm-version and no --async-scheduling, each candidate takes the
// release's async scheduling default for its own layout: on from v0.14.0,
// off with pipeline stages (vLLM turns it off there), whatever the base
// layout was. A user's explicit choice stays on every candidate.
func TestVersionAsyncPerCandidate(t *testing.T) {
	s := smallSettings(t, testSLO, 1)
	s.Space.PP = []int{1, 2}
	s.Space.Modes = []string{runresult.ModeColocated}
	s.Base.VLLMVersion = "0.14.0"
	if err := s.Base.ApplyVLLMDefaults(true, false); err != nil { // as the command does for its PP 1 base
		t.Fatal(err)
	}
	if !s.Base.Engine.AsyncScheduling {
		t.Fatal("v0.14.0's default for a PP 1 base: async scheduling on")
	}
	all, err := s.Space.Enumerate()
	if err != nil {
		t.Fatal(err)
	}
	for _, versionAsync := range []bool{true, false} {
		s.VersionAsync = versionAsync
		pp := map[int]bool{}
		for _, c := range all {
			cfg := s.config(c)
			pp[c.Layout.PP] = true
			want := c.Layout.PP == 1 || !versionAsync
			if cfg.Engine.AsyncScheduling != want {
				t.Errorf("version default %v: %s simulated with async scheduling %v, want %v", versionAsync, c.ID(), cfg.Engine.AsyncScheduling, want)
			}
		}
		if !pp[1] || !pp[2] {
			t.Fatalf("the space has no PP 1 and PP 2 candidates: %v", pp)
		}
	}
	s.VersionAsync, s.Base.VLLMVersion = true, "x"
	if err := s.validate(); err == nil {
		t.Error("a bad --vllm-version validated")
	}
}
