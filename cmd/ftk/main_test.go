package main

import (
	"os"
	"testing"
)

// runAsFTK makes the test binary the ftk command line: tests that need a
// separate process (a search killed with SIGKILL, Slurm job arrays) run
// the test binary with it set.
const runAsFTK = "FTK_TEST_RUN_AS_FTK"

func TestMain(m *testing.M) {
	if os.Getenv(runAsFTK) == "1" {
		os.Exit(runHandlingSignals(append([]string{"ftk"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
