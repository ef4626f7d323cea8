//go:build unix

package progress

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth is the terminal's width in columns, 0 when unknown.
func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
