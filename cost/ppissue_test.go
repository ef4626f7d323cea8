package cost

import (
	"testing"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Pipeline stages exchange the activations (hidden states and residual)
// in vLLM's Worker.execute_model, outside the model (v1/worker/gpu_worker.py):
// a stage after the first receives them before its layers, a stage before
// the last sends them after; CUDA graphs, which capture the model's
// forward only, never hold them. Every mode pays their issue on top of the
// stage's own: eager as the first and last ops, piecewise around the
// pieces, full graphs beside the one replay.
func TestPipelineActivationsIssuedOutsideGraphs(t *testing.T) {
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	l := spec.Layout{TP: 2, PP: 4, EP: 2}.Normalize()
	costs := roofline.DefaultIssueCosts(d)
	_, _, between := spec.ModelOps(m, l)
	send, recv := costs.OpUs(roofline.IssueOf(m, l, between))/1e3, costs.OpUs(roofline.PPRecvIssue(l))/1e3
	if !(recv > send && send > 0) {
		t.Fatalf("receive %.4f ms, send %.4f ms: want both, the receive with its TP all-gathers larger", recv, send)
	}
	b := decodeShape(1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000)
	launch := func(mode string, stage int) float64 {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, MoE: runresult.MoEConfig{Routing: runresult.RoutingEven}, ExecutionMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		var c StepCost
		cm.StageCost(&b, stage, &c)
		return c.Ms[CompLaunch]
	}
	graph := costs.GraphLaunchUs / 1e3
	for _, tc := range []struct {
		stage int
		want  float64
	}{{0, graph + send}, {1, graph + recv + send}, {3, graph + recv}} {
		if got := launch(runresult.ExecCUDAGraph, tc.stage); !near(got, tc.want) {
			t.Errorf("CUDA graph, stage %d: issue %.4f ms, want the replay %.4f ms plus the activations' receive/send = %.4f ms", tc.stage, got, graph, tc.want)
		}
	}
	// Eager: stage 1 runs stage 0's layers with a receive for the embedding.
	emb := costs.OpUs(roofline.IssueOf(m, l, &spec.Op{Name: spec.OpEmb})) / 1e3
	if got, want := launch(runresult.ExecEager, 1)-launch(runresult.ExecEager, 0), recv-emb; !near(got, want) {
		t.Errorf("eager: stage 1 issues %.4f ms more than stage 0, want the receive less the embedding = %.4f ms", got, want)
	}
	// Piecewise: the receive before the first piece, the send after the last.
	if got, want := launch(runresult.ExecPiecewise, 1)-launch(runresult.ExecPiecewise, 2), 0.0; !near(got, want) {
		t.Errorf("piecewise: stages 1 and 2 differ by %.4f ms, want equal", got)
	}
	if got := launch(runresult.ExecPiecewise, 3) - launch(runresult.ExecPiecewise, 2); got >= 0 {
		t.Errorf("piecewise: the last stage (LM head piece, no send) issues %.4f ms more than a middle one, want less", got)
	}
}
