package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSimulateRefusesOutputsTheDiskCannotHold: a run whose requests files
// cannot fit on the output's disk (10^12 requests: at least 150 TB) is
// refused before it starts, with the sizes and what to do, exit 1, and no
// output folder; it used to run until the disk filled, losing the work.
func TestSimulateRefusesOutputsTheDiskCannotHold(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"ftk", "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32",
		"--num-requests", "1000000000000", "-o", "out"}, &out, &errb)
	for _, want := range []string{"requests files of 1000000000000 requests need at least 153.9 TB", "free: free space, give -o on a larger disk, or lower --num-requests"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if _, err := os.Stat("out"); err == nil {
		t.Error("the refused run left an output folder")
	}
}
