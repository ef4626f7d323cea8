package outlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ftk-dev/ftk/atomicfile"
)

// Lock is a held output lock.
type Lock struct {
	f      *os.File
	path   string
	output string
	// StaleTemps is how many temporary files of an earlier, killed run
	// of this output Take removed.
	StaleTemps int
	held       *Holdings
	foreign    bool // the lock file is another user's, opened read-only (see take)
}

// HeldError is returned when another process holds the lock.
type HeldError struct {
	Output  string // the folder or file being written
	PID     int    // 0 when the holder wrote no record yet
	Command string
	Since   time.Time
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = fmt.Sprintf("pid %d", e.PID)
		if e.Command != "" {
			who += fmt.Sprintf(" (%s)", e.Command)
		}
		if !e.Since.IsZero() {
			who += ", since " + e.Since.UTC().Format("2006-01-02 15:04:05 UTC")
		}
	}
	return fmt.Sprintf("%s is being written by %s: wait for it to finish, or write to another output", e.Output, who)
}

// Take takes the lock of output, a folder or a file that is about to be
// written, creating the folder that holds it. command is recorded for a
// second writer's error (the command line of the run). The lock file,
// .<name>.ftk-lock, sits beside the output, never inside it, so a stage
// reading or cleaning its own folder never sees it.
func Take(output, command string) (*Lock, error) {
	abs, err := filepath.Abs(output)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	d := filepath.Dir(abs)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	l, err := take(filepath.Join(d, "."+filepath.Base(abs)+".ftk-lock"), output, command, os.OpenFile)
	if err != nil {
		return nil, err
	}
	// Holding the lock, no other process writes output: its temporary
	// files are a killed run's.
	if l.StaleTemps, err = atomicfile.RemoveTemps(abs); err != nil {
		l.Release()
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	l.output = abs
	return l, nil
}

// maxTakeTries bounds the retries of a taker that keeps locking lock
// files their holders removed (see acquire).
const maxTakeTries = 100

// take takes the lock file at lockPath, opening it with open (os.OpenFile).
//
// A lock file this process may not write is another user's, left by a run
// that was killed before it could remove it (in a shared folder with the
// sticky bit, as /tmp, only its owner may remove it). It is opened
// read-only, which flock(2) allows: when no process holds it the lock is
// taken through it, and it is left as it is (its record, naming the dead
// run, is not rewritten, and Release cannot remove it), so that another
// user's killed run never blocks an output name.
func take(lockPath, output, command string, open func(string, int, os.FileMode) (*os.File, error)) (*Lock, error) {
	var f *os.File
	foreign := false
	for try := 0; ; try++ {
		var err error
		f, err = open(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
		if errors.Is(err, fs.ErrPermission) {
			f, err = open(lockPath, os.O_RDONLY, 0)
			foreign = err == nil
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", output, err)
		}
		held, stale, err := acquire(f, lockPath)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", output, err)
		}
		if held {
			e := readHolder(lockPath)
			f.Close()
			e.Output = output
			return nil, e
		}
		if !stale {
			break
		}
		f.Close() // acquire released the removed file's lock
		if try == maxTakeTries {
			return nil, fmt.Errorf("lock %s: %s keeps being removed under us: another ftk is taking and releasing it; retry", output, lockPath)
		}
	}
	if foreign {
		return &Lock{f: f, path: lockPath, foreign: true}, nil
	}
	rec := fmt.Sprintf("%d\n%s\n%s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), oneLine(command))
	err := f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(rec), 0)
	}
	if err != nil {
		unlock(f)
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	return &Lock{f: f, path: lockPath}, nil
}

// acquire takes the flock of f, opened at path: held when another open
// file holds it; stale when the lock was got but path no longer names f
// (its holder removed it on release after this process opened it: the
// lock of a removed file guards nothing), in which case it is dropped.
func acquire(f *os.File, path string) (held, stale bool, err error) {
	if held, err = tryLock(f); err != nil || held {
		return held, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		unlock(f)
		return false, false, err
	}
	pi, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		unlock(f)
		return false, false, err
	}
	if err != nil || !os.SameFile(fi, pi) {
		unlock(f)
		return false, true, nil
	}
	return false, false, nil
}

// Release drops the lock and removes its file; a nil Lock is fine. The
// file is removed while the lock is held (see acquire for why that is
// safe).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.held.forget(l)
	rerr := l.remove()
	uerr := unlock(l.f)
	cerr := l.f.Close()
	l.f = nil
	return errors.Join(rerr, uerr, cerr)
}

// remove clears the holder record and removes the lock file; the caller
// holds the lock.
func (l *Lock) remove() error {
	if l.foreign {
		return nil // not ours to clear or remove
	}
	terr := l.f.Truncate(0)
	rerr := os.Remove(l.path)
	if errors.Is(rerr, os.ErrNotExist) {
		rerr = nil
	}
	return errors.Join(terr, rerr)
}

// readHolder reads the record the holder wrote: pid, start time, command.
func readHolder(path string) *HeldError {
	e := &HeldError{}
	data, err := os.ReadFile(path)
	if err != nil {
		return e
	}
	lines := strings.SplitN(string(data), "\n", 3)
	if len(lines) == 3 {
		e.PID, _ = strconv.Atoi(lines[0])
		e.Since, _ = time.Parse(time.RFC3339, lines[1])
		e.Command = strings.TrimSpace(lines[2])
	}
	return e
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
