package runresult

import (
	"github.com/ftk-dev/ftk/spec"
	"testing"
)

// Each vLLM release takes the engine defaults it shipped with: piecewise
// graphs before v0.11.0, FULL_AND_PIECEWISE from it; async scheduling
// from v0.14.0, never with pipeline parallelism; settings the user gave
// are kept.
func TestVLLMDefaults(t *testing.T) {
	for _, tc := range []struct {
		v                   string
		pp                  int
		keepExec, keepAsync bool
		exec                string
		async               bool
	}{
		{"0.10.2", 1, false, false, ExecPiecewise, false},
		{"0.11.0", 1, false, false, ExecFullAndPiecewise, false},
		{"v0.13.0", 1, false, false, ExecFullAndPiecewise, false},
		{"0.14.0", 1, false, false, ExecFullAndPiecewise, true},
		{"0.24.0", 2, false, false, ExecFullAndPiecewise, false},
		{"0.14.1", 1, true, true, ExecEager, false},
	} {
		c := DefaultConfig()
		c.VLLMVersion, c.Layout = tc.v, spec.Layout{TP: 1, PP: tc.pp}
		c.Engine.ExecutionMode = ExecEager
		if err := c.ApplyVLLMDefaults(tc.keepExec, tc.keepAsync); err != nil {
			t.Fatal(err)
		}
		if c.Engine.ExecutionMode != tc.exec || c.Engine.AsyncScheduling != tc.async {
			t.Errorf("vLLM %s PP%d: execution mode %s, async %v; want %s, %v", tc.v, tc.pp, c.Engine.ExecutionMode, c.Engine.AsyncScheduling, tc.exec, tc.async)
		}
	}
	c := DefaultConfig()
	c.VLLMVersion = "latest"
	if err := c.ApplyVLLMDefaults(false, false); err == nil {
		t.Error("a version that is not MAJOR.MINOR[.PATCH] was accepted")
	}
	for _, d := range VLLMDefaults {
		if d.Source == "" {
			t.Errorf("default %s since %q has no source", d.Setting, d.Since)
		}
	}
}
