//go:build !unix

package fit

import "time"

// cpuTime is not measured outside unix.
func cpuTime() time.Duration { return 0 }
