package collect

import (
	"strings"
	"testing"
	"time"
)

func TestLogProgress(t *testing.T) {
	var b strings.Builder
	p := &logProgress{w: &b, total: 4, start: time.Now().Add(-2 * time.Second), last: time.Now(), every: time.Hour}
	p.Done(false)
	if b.Len() != 0 {
		t.Fatalf("printed before the interval: %q", b.String())
	}
	p.every = 0
	p.Done(true)
	line := b.String()
	for _, want := range []string{"collect: 2/4 shapes (50.0%)", "1.0 s/shape", "ETA 2s", "1 failed"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
}
