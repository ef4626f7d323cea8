package runresult

import (
	"fmt"
	"testing"
)

// TestRequestFilesBytes: the bound counts every request id's digits and
// the fixed bytes of each row, and is below the typical size.
func TestRequestFilesBytes(t *testing.T) {
	for _, n := range []int{1, 9, 10, 11, 99, 100, 1001, 123_456} {
		digits := 0
		for i := 0; i < n; i++ {
			digits += len(fmt.Sprint(i))
		}
		atLeast, typical := RequestFilesBytes(n)
		if want := uint64(n*(arrowRowBytes+csvRowBytes) + digits); atLeast != want || typical <= atLeast {
			t.Errorf("n %d: at least %d, typical %d; want %d below typical", n, atLeast, typical, want)
		}
	}
	if a, _ := RequestFilesBytes(100_000_000); a != 100_000_000*(arrowRowBytes+csvRowBytes)+788_888_890 {
		t.Errorf("100M requests: at least %d", a)
	}
}
