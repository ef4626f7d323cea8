package outlock

import (
	"context"
	"fmt"
	"sync"

	"github.com/ftk-dev/ftk/atomicfile"
)

// Holdings are the output locks one process holds, so that a run stopped
// by a signal can remove the temporary files of the outputs it was
// writing before it exits (Interrupt). The process's main function makes
// one, hands it down in the context (NewContext) and calls Interrupt from
// its signal handler; a nil *Holdings takes plain locks.
type Holdings struct {
	mu          sync.Mutex
	locks       map[*Lock]bool
	interrupted bool
}

// Take takes the lock of output (see the function Take) and records it
// until its release.
func (h *Holdings) Take(output, command string) (*Lock, error) {
	if h == nil {
		return Take(output, command)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.interrupted {
		return nil, fmt.Errorf("lock %s: the run was interrupted", output)
	}
	l, err := Take(output, command)
	if err != nil {
		return nil, err
	}
	if h.locks == nil {
		h.locks = map[*Lock]bool{}
	}
	l.held = h
	h.locks[l] = true
	return l, nil
}

func (h *Holdings) forget(l *Lock) {
	if h == nil {
		return
	}
	h.mu.Lock()
	delete(h.locks, l)
	h.mu.Unlock()
}

// Interrupt removes the temporary files of every output still locked
// (atomicfile.RemoveTemps) and refuses later locks, returning how many
// files it removed, and the lock files. The locks stay held: the caller is about to exit, and
// the kernel drops them then. A write that starts a new temporary file
// between Interrupt and the exit leaves it to the next run's Take, which
// removes it.
func (h *Holdings) Interrupt() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.interrupted = true
	n := 0
	var first error
	for l := range h.locks {
		k, err := atomicfile.RemoveTemps(l.output)
		n += k
		if err == nil {
			err = l.remove() // the lock file too; the lock stays held until the exit
		}
		if first == nil {
			first = err
		}
	}
	return n, first
}

type holdingsKey struct{}

// NewContext returns ctx carrying h.
func NewContext(ctx context.Context, h *Holdings) context.Context {
	return context.WithValue(ctx, holdingsKey{}, h)
}

// FromContext is the Holdings ctx carries, nil when none (then
// FromContext(ctx).Take takes a plain lock).
func FromContext(ctx context.Context) *Holdings {
	h, _ := ctx.Value(holdingsKey{}).(*Holdings)
	return h
}
