//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the controller side (to read what the
// program draws) and the terminal side (its stderr).
func openPTY(t *testing.T) (ctrl, term *os.File) {
	t.Helper()
	ctrl, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("this test needs a pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctrl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ctrl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close(); term.Close() })
	return ctrl, term
}

// TestSimulateProgressOnTerminal: on a terminal simulate draws a bar of
// requests finished (package progress), ending at the total; off a
// terminal (a pipe, a file, a buffer) stderr holds no bar.
func TestSimulateProgressOnTerminal(t *testing.T) {
	args := []string{"ftk", "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:64x8", "--rate", "50", "--num-requests", "3000", "--seed", "1"}
	ctrl, term := openPTY(t)
	drawn := make(chan string)
	go func() {
		b, _ := io.ReadAll(ctrl) // until the terminal side closes (EIO)
		drawn <- string(b)
	}()
	var out bytes.Buffer
	code := run(context.Background(), append(args, "-o", t.TempDir()), &out, term)
	term.Close()
	got := <-drawn
	if code != 0 {
		t.Fatalf("exit %d: %s", code, got)
	}
	if !strings.Contains(got, "simulate 3000/3000 requests finished") {
		t.Errorf("terminal shows no finished bar:\n%q", got)
	}
	var errOut bytes.Buffer
	if code := run(context.Background(), append(args, "-o", t.TempDir()), &out, &errOut); code != 0 || strings.Contains(errOut.String(), "requests finished") {
		t.Errorf("off a terminal: exit %d, stderr %q", code, errOut.String())
	}
}
