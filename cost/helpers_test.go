package cost

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// decodeShape is a decode-only batch of the given contexts.
func decodeShape(ctxs ...int) BatchShape {
	return BatchShape{Tokens: len(ctxs), Seqs: len(ctxs), DecodeContexts: ctxs}
}

// near reports whether a and b agree to 1e-9 relative (float rounding of
// times that are sums of step costs).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func lookup(t *testing.T, model, device string) (*spec.Model, *spec.Device) {
	t.Helper()
	m, err := spec.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	d, err := spec.LookupDevice(device)
	if err != nil {
		t.Fatal(err)
	}
	return m, d
}

// prefillShape is one prefill chunk on a cached context.
func prefillShape(chunk, ctx int) BatchShape {
	return BatchShape{Tokens: chunk, Seqs: 1, PrefillChunks: []int{chunk}, PrefillContexts: []int{ctx}}
}
