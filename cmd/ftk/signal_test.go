package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftk-dev/ftk/atomicfile"
)

// startLongSimulate starts 'ftk simulate' of 5,000,000 requests into out as
// its own process and waits until its temporary requests files exist.
func startLongSimulate(t *testing.T, out string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32", "--rate", "50",
		"--num-requests", "5000000", "-o", out)
	cmd.Env = append(os.Environ(), runAsFTK+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for len(temps(t, out)) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no temporary requests files in %s after a minute; stderr: %s", out, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd, &stderr
}

// temps lists the atomicfile temporary files in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if atomicfile.IsTemp(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A simulate stopped by SIGTERM or SIGINT removes its temporary files,
// says so and exits 128 + the signal; one killed by SIGKILL leaves them,
// and the next run of the output removes them and succeeds.
func TestSignalsRemoveTemporaryFiles(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		out := filepath.Join(t.TempDir(), "sim")
		cmd, stderr := startLongSimulate(t, out)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
			t.Errorf("INV-10: %v: %v, want exit %d; stderr: %s", sig, err, 128+int(sig), stderr)
		}
		if !strings.Contains(stderr.String(), "stopped by "+sig.String()+"; removed 2 temporary files") {
			t.Errorf("INV-10: %v: stderr %q does not say the 2 temporary files were removed", sig, stderr)
		}
		entries, _ := os.ReadDir(out)
		for _, e := range entries {
			t.Errorf("INV-10: %v: %s left in the output folder", sig, e.Name())
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(out), ".sim.ftk-lock")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("INV-10: %v: the lock file is left beside the output (%v)", sig, err)
		}
	}

	out := filepath.Join(t.TempDir(), "sim")
	cmd, _ := startLongSimulate(t, out)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	left := temps(t, out)
	if len(left) != 2 {
		t.Fatalf("INV-10: SIGKILL left %v, want the two temporary requests files (the test needs them)", left)
	}
	_, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32", "--rate", "50",
		"--num-requests", "50", "-o", out)
	if code != 0 {
		t.Fatalf("INV-10: rerun after SIGKILL: exit %d: %s", code, errOut)
	}
	if l := temps(t, out); len(l) != 0 {
		t.Errorf("INV-10: the rerun left the killed run's temporary files %v", l)
	}
	for _, f := range []string{"requests.csv", "requests.arrow", "summary.json", "config.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("INV-10: rerun: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), ".sim.ftk-lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("INV-10: the rerun left its lock file (%v)", err)
	}
}
