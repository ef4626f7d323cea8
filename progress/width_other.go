//go:build !unix

package progress

import "os"

// terminalWidth is unknown off Unix: the default width is used.
func terminalWidth(*os.File) int { return 0 }
