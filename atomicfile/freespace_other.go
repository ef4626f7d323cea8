//go:build !linux && !darwin

package atomicfile

// freeBytes cannot tell on this system.
func freeBytes(string) (uint64, bool) { return 0, false }
