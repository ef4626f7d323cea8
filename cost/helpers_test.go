package cost

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/roofline"
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

// issueMsOf sums, independently of the cost model, the eager host issue
// time of one step on a one-stage layout: every op of every layer (the
// prefill or decode attention only when the batch has it), the embedding
// and the LM head, priced by roofline's inventory and issue costs.
func issueMsOf(m *spec.Model, l spec.Layout, costs spec.IssueCosts, prefill, decode bool) float64 {
	var us float64
	for i := 0; i < m.NumLayers; i++ {
		for _, o := range spec.LayerOps(m, l, i) {
			if (o.Name == spec.OpAttnPrefill && !prefill) || (o.Name == spec.OpAttnDecode && !decode) {
				continue
			}
			us += costs.OpUs(roofline.IssueOf(m, l, &o))
		}
	}
	first, last, _ := spec.ModelOps(m, l)
	for _, o := range append(first, last...) {
		us += costs.OpUs(roofline.IssueOf(m, l, &o))
	}
	return us / 1e3
}
