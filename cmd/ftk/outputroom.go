package main

import (
	"fmt"
	"io"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/runresult"
)

// checkOutputRoom refuses, before a run starts, a run of n requests whose
// requests.csv and requests.arrow cannot fit on the disk of dir (a run
// that fills the disk loses all its work), and warns when they fit only
// if smaller than usual. It says nothing where the free space is unknown.
func checkOutputRoom(stderr io.Writer, dir string, n int) error {
	free, ok := atomicfile.FreeBytes(dir)
	if !ok {
		return nil
	}
	atLeast, typical := runresult.RequestFilesBytes(n)
	switch {
	case atLeast > free:
		return fmt.Errorf("simulate: the requests files of %d requests need at least %s (about %s as runs usually write them) and %s has %s free: free space, give -o on a larger disk, or lower --num-requests",
			n, sizeText(atLeast), sizeText(typical), dir, sizeText(free))
	case typical > free:
		fmt.Fprintf(stderr, "warning: the requests files of %d requests usually take about %s and %s has %s free: the run may fill the disk and fail at its end\n",
			n, sizeText(typical), dir, sizeText(free))
	}
	return nil
}

// sizeText writes a byte count in decimal units (GB = 1e9 bytes, as df -H).
func sizeText(b uint64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.1f TB", float64(b)/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	}
	return fmt.Sprintf("%.1f MB", float64(b)/1e6)
}
