package outlock

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSecondWriterFails: a second lock of one output fails at once, naming
// the holder; after release it succeeds. Folder and file outputs alike.
func TestSecondWriterFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		name string
		take func(cmd string) (*Lock, error)
		out  string
	}{
		{"folder", func(c string) (*Lock, error) { return Take(dir, c) }, dir},
		{"same folder by another path", func(c string) (*Lock, error) { return Take(dir+"/./", c) }, dir + "/./"},
		{"file", func(c string) (*Lock, error) { return Take(filepath.Join(dir, "b.arrow"), c) }, filepath.Join(dir, "b.arrow")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.take("ftk simulate   --model x\n-o out")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = tc.take("ftk simulate -o out")
			var he *HeldError
			if !errors.As(err, &he) {
				t.Fatalf("second lock: %v, want a HeldError", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the second writer waited %v", d)
			}
			want := tc.out + " is being written by pid " + strconv.Itoa(os.Getpid()) + " (ftk simulate --model x -o out), since "
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want it to start %q", err, want)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			l2, err := tc.take("again")
			if err != nil {
				t.Fatalf("after release: %v", err)
			}
			l2.Release()
		})
	}
	var nilLock *Lock
	if err := nilLock.Release(); err != nil {
		t.Error(err)
	}
}

// TestHolderProcess: a lock held by another process is reported with that
// process's pid; once the process is killed (SIGKILL: no cleanup runs) the
// lock it left does not block the next writer.
func TestHolderProcess(t *testing.T) {
	if dir := os.Getenv("OUTLOCK_TEST_HOLD"); dir != "" {
		if _, err := Take(dir, "holder "+dir); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$")
	cmd.Env = append(os.Environ(), "OUTLOCK_TEST_HOLD="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	_, err = Take(dir, "second")
	var he *HeldError
	if !errors.As(err, &he) || he.PID != cmd.Process.Pid || he.Command != "holder "+dir {
		t.Fatalf("lock held by pid %d: got %v (%+v)", cmd.Process.Pid, err, he)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	l, err := Take(dir, "after the holder died")
	if err != nil {
		t.Fatalf("a dead holder's lock blocks: %v", err)
	}
	l.Release()
}

// Take removes the temporary files a killed writer left, but only once it
// holds the lock: a second writer that fails leaves the holder's alone.
func TestTakeRemovesStaleTemps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	temp := filepath.Join(dir, ".requests.csv.tmp-123")
	write := func() {
		if err := os.WriteFile(temp, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write()
	l, err := Take(dir, "first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) || l.StaleTemps != 1 {
		t.Errorf("INV-10: Take left the stale temporary file (stat: %v, removed %d)", err, l.StaleTemps)
	}
	write() // the holder's own write in progress
	if _, err := Take(dir, "second"); err == nil {
		t.Fatal("a second Take succeeded")
	}
	if _, err := os.Stat(temp); err != nil {
		t.Errorf("INV-10: a failed Take removed the holder's temporary file: %v", err)
	}
	// Holdings: Interrupt removes the temporary files of held outputs and
	// refuses new locks; a released lock is forgotten.
	l.Release()
	h := &Holdings{}
	l2, err := h.Take(dir, "third")
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "released")
	l3, err := h.Take(other, "fourth")
	if err != nil {
		t.Fatal(err)
	}
	l3.Release()
	otherTemp := filepath.Join(filepath.Dir(other), ".released.tmp-9")
	if err := os.WriteFile(otherTemp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	write()
	if n, err := h.Interrupt(); err != nil || n != 1 {
		t.Errorf("INV-10: Interrupt = %d, %v; want 1 file removed", n, err)
	}
	if _, err := os.Stat(otherTemp); err != nil {
		t.Errorf("INV-10: Interrupt removed a file of a released output: %v", err)
	}
	if _, err := h.Take(filepath.Join(t.TempDir(), "x"), "fifth"); err == nil {
		t.Error("Take after Interrupt succeeded")
	}
	l2.Release()
}

// TestLockFileRemovedOnRelease: release removes .<name>.ftk-lock, and so
// does an interrupted run (Holdings.Interrupt), which keeps the lock held.
func TestLockFileRemovedOnRelease(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	lockPath := filepath.Join(dir, ".out.ftk-lock")
	l, err := Take(out, "ftk collect")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lockPath); err != nil {
		t.Fatalf("no lock file while held: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lockPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after release: %v", err)
	}
	h := &Holdings{}
	l, err = h.Take(out, "ftk collect")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lockPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file after an interrupt: %v", err)
	}
	l.Release()
}

// TestRemovedLockFileStillExcludes: removing the lock file on release
// opens no hole. A process that opened the file before its holder removed
// it can lock that removed file; it must notice (the path names another
// file, or none) and try again, meeting the new holder's lock.
func TestRemovedLockFileStillExcludes(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	lockPath := filepath.Join(dir, ".out.ftk-lock")
	a, err := Take(out, "run A")
	if err != nil {
		t.Fatal(err)
	}
	early, err := os.OpenFile(lockPath, os.O_RDWR, 0) // B opens, A still holds
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	if err := a.Release(); err != nil { // A removes the file
		t.Fatal(err)
	}
	c, err := Take(out, "run C") // C creates and locks a new file
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	held, stale, err := acquire(early, lockPath) // B locks the removed file
	if err != nil || held || !stale {
		t.Fatalf("B on the removed file: held %v stale %v err %v; want stale", held, stale, err)
	}
	var he *HeldError
	if _, err := Take(out, "run B"); !errors.As(err, &he) || !strings.Contains(err.Error(), "run C") {
		t.Fatalf("B's retry: %v, want C's lock to refuse it", err)
	}
}

// TestForeignLockFileDoesNotBlock: a lock file another user's killed run
// left (this process may not write it; in a sticky shared folder it may
// not remove it either) no longer blocks the output name: it is opened
// read-only and locked through that, so a second writer is still refused,
// and it is left as it was on release.
func TestForeignLockFileDoesNotBlock(t *testing.T) {
	lockPath := filepath.Join(t.TempDir(), ".out.ftk-lock")
	record := "4194302\n2026-01-02T03:04:05Z\nftk simulate -o out\n"
	if err := os.WriteFile(lockPath, []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another user's 0644 file: opening it to write is refused.
	notOurs := func(path string, flag int, perm os.FileMode) (*os.File, error) {
		if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
			return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
		}
		return os.OpenFile(path, flag, perm)
	}
	l, err := take(lockPath, "out", "ftk simulate -o out", notOurs)
	if err != nil {
		t.Fatalf("a foreign stale lock file blocks the output: %v", err)
	}
	var held *HeldError
	if _, err := take(lockPath, "out", "second", notOurs); !errors.As(err, &held) {
		t.Errorf("a second writer while the foreign lock file is held: %v, want a HeldError", err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if b, err := os.ReadFile(lockPath); err != nil || string(b) != record {
		t.Errorf("the foreign lock file was changed: %q, %v", b, err)
	}
	l, err = take(lockPath, "out", "third", notOurs)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l.Release()
}
