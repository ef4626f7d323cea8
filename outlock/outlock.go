package outlock

import (
	"errors"
	"fmt"
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
	l, err := take(filepath.Join(d, "."+filepath.Base(abs)+".ftk-lock"), output, command)
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

func take(lockPath, output, command string) (*Lock, error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	held, err := tryLock(f)
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
	rec := fmt.Sprintf("%d\n%s\n%s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), oneLine(command))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(rec), 0)
	}
	if err != nil {
		unlock(f)
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", output, err)
	}
	return &Lock{f: f, path: lockPath}, nil
}

// Release drops the lock; a nil Lock is fine. The holder record is cleared
// first so that a later reader never names a finished run.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.held.forget(l)
	terr := l.f.Truncate(0)
	uerr := unlock(l.f)
	cerr := l.f.Close()
	l.f = nil
	return errors.Join(terr, uerr, cerr)
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
