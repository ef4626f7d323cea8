package atomicfile

import (
	"os"
	"path/filepath"
)

// FreeBytes returns the bytes an unprivileged writer may still use on the
// file system that holds path (or, when path does not exist yet, its
// nearest existing parent), and false when it cannot tell (an unsupported
// system, or no parent found).
func FreeBytes(path string) (uint64, bool) {
	p, err := filepath.Abs(path)
	if err != nil {
		return 0, false
	}
	for {
		if _, err := os.Stat(p); err == nil {
			return freeBytes(p)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return 0, false
		}
		p = parent
	}
}
