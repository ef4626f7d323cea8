package main

import (
	"os"
	"strings"

	"github.com/ftk-dev/ftk/outlock"
)

// lockOutput takes the lock of an output a command is about to write, so
// that a second run writing it fails at once naming this one (see
// package outlock). The caller releases it when the output is complete.
func lockOutput(output string) (*outlock.Lock, error) {
	return outlock.Take(output, commandLine())
}

// commandLine is this process's command line, recorded in output locks.
func commandLine() string { return strings.Join(os.Args, " ") }
