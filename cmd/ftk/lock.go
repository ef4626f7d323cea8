package main

import (
	"context"
	"os"
	"strings"

	"github.com/ftk-dev/ftk/outlock"
)

// lockOutput takes the lock of an output a command is about to write, so
// that a second run writing it fails at once naming this one (see
// package outlock); holding it, it removes the temporary files a killed
// run of the output left, and a SIGINT or SIGTERM removes this run's (see
// runHandlingSignals). The caller releases it when the output is complete.
func lockOutput(ctx context.Context, output string) (*outlock.Lock, error) {
	return outlock.FromContext(ctx).Take(output, commandLine())
}

// commandLine is this process's command line, recorded in output locks.
func commandLine() string { return strings.Join(os.Args, " ") }
