//go:build linux || darwin

package atomicfile

import "syscall"

// freeBytes returns the blocks available to unprivileged users times the
// block size (statfs f_bavail x f_bsize, what df prints as Avail).
func freeBytes(path string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
