//go:build unix

package bundle

import (
	"fmt"
	"os"
	"syscall"
)

// readBundleFile maps the file at path into memory read-only: the node
// columns are read in place, with no copy of the file on the heap. release
// unmaps it; nothing may refer to the data afterwards.
func readBundleFile(path string) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory, not a bundle file", path)
	}
	size := st.Size()
	if size == 0 || size != int64(int(size)) {
		data, err := os.ReadFile(path) // empty or too large to map: read
		return data, func() {}, err
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return data, func() { syscall.Munmap(data) }, nil
}
