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

// TestSimulateRefusesClientsThatCannotFitInMemory: closed-loop clients
// whose requests in flight cannot fit in the memory available (10^10
// clients: about 14 TB) are refused before the run, exit 1, naming
// --clients; they used to end in the runtime's fatal out-of-memory error.
// Clients beyond the request count cost nothing (10^9 clients for 10
// requests run).
func TestSimulateRefusesClientsThatCannotFitInMemory(t *testing.T) {
	if _, ok := availableMemory(); !ok {
		t.Skip("available memory unknown on this system: the check is off")
	}
	t.Chdir(t.TempDir())
	_, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32",
		"--clients", "10000000000", "--num-requests", "10000000000", "-o", "out")
	if code != 1 || !strings.Contains(errOut, "10000000000 clients keep up to 10000000000 requests in flight, about 14.0 TB") || !strings.Contains(errOut, "lower --clients") {
		t.Errorf("exit %d, stderr %q; want exit 1 and the memory the clients need", code, errOut)
	}
	if _, err := os.Stat("out"); err == nil {
		t.Error("the refused run left an output folder")
	}
	if _, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32",
		"--clients", "1000000000", "--num-requests", "10", "-o", "out"); code != 0 {
		t.Errorf("10^9 clients for 10 requests: exit %d, %s", code, errOut)
	}
}
