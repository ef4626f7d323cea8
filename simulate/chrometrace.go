package simulate

import (
	"io"
	"math"
	"strconv"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
)

// chromeTrace writes a Chrome trace (chrome://tracing, Perfetto): one
// process per engine (replica, or prefill / decode instance) with two
// threads per pipeline stage, its CPU and its GPU. The CPU thread's slices
// are the engine steps (args: tokens, sequences, the per-component
// milliseconds of the cost model), each split into the host time before
// the forward pass, the issue of the forward, the wait for the GPU (the
// sampled tokens' sync) and the host time after it, as far as they show in
// the step's wall time (host time hidden by async scheduling does not);
// the GPU thread shows the forward's GPU span, its busy time in args; a
// KV counter per engine; one async span per request from arrival to finish
// with an instant at its first token; and, in a disaggregated run, one
// process of KV links with an async span per transfer. Events are streamed
// as they happen.
type chromeTrace struct {
	w        io.Writer
	buf      []byte
	first    bool
	err      error
	requests int // the pid of the requests process
	links    int // the pid of the KV links process
	part     [cost.NumComponents]float64
}

// chromeEngine names one engine's process and its stages.
type chromeEngine struct {
	name   string
	stages int
}

func newChromeTrace(w io.Writer, engines []chromeEngine, links int) *chromeTrace {
	t := &chromeTrace{w: w, first: true, requests: len(engines), links: len(engines) + 1}
	t.buf = append(t.buf, `{"displayTimeUnit":"ms","traceEvents":[`...)
	for p, e := range engines {
		t.meta("process_name", p, 0, e.name)
		for s := 0; s < e.stages; s++ {
			t.meta("thread_name", p, cpuTID(s), "stage "+strconv.Itoa(s)+" CPU")
			t.meta("thread_name", p, gpuTID(s), "stage "+strconv.Itoa(s)+" GPU")
		}
	}
	t.meta("process_name", len(engines), 0, "requests")
	if links > 0 {
		t.meta("process_name", t.links, 0, "KV links")
		for i := 0; i < links; i++ {
			t.meta("thread_name", t.links, i, "link of prefill "+strconv.Itoa(i))
		}
	}
	t.flush()
	return t
}

func (t *chromeTrace) sep() {
	if !t.first {
		t.buf = append(t.buf, ',')
	}
	t.first = false
	t.buf = append(t.buf, '\n')
}

func (t *chromeTrace) meta(name string, pid, tid int, value string) {
	t.sep()
	t.buf = append(t.buf, `{"ph":"M","name":"`...)
	t.buf = append(t.buf, name...)
	t.buf = append(t.buf, `","pid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(pid), 10)
	t.buf = append(t.buf, `,"tid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(tid), 10)
	t.buf = append(t.buf, `,"args":{"name":`...)
	t.buf = strconv.AppendQuote(t.buf, value)
	t.buf = append(t.buf, "}}"...)
}

// us appends seconds as microseconds with nanosecond resolution.
func appendUs(b []byte, s float64) []byte { return strconv.AppendFloat(b, s*1e6, 'f', 3, 64) }

func (t *chromeTrace) head(ph, name string, pid, tid int, tsS float64) {
	t.sep()
	t.buf = append(t.buf, `{"ph":"`...)
	t.buf = append(t.buf, ph...)
	t.buf = append(t.buf, `","name":"`...)
	t.buf = append(t.buf, name...)
	t.buf = append(t.buf, `","pid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(pid), 10)
	t.buf = append(t.buf, `,"tid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(tid), 10)
	t.buf = append(t.buf, `,"ts":`...)
	t.buf = appendUs(t.buf, tsS)
}

func (t *chromeTrace) arg(name string, v int64) {
	t.buf = append(t.buf, '"')
	t.buf = append(t.buf, name...)
	t.buf = append(t.buf, `":`...)
	t.buf = strconv.AppendInt(t.buf, v, 10)
}

// cpuTID and gpuTID are the threads of stage s's CPU and GPU timelines.
func cpuTID(s int) int { return 2 * s }
func gpuTID(s int) int { return 2*s + 1 }

// ObserveStep implements StepObserver.
func (t *chromeTrace) ObserveStep(r *StepRecord) {
	for s, sp := range r.Stages {
		t.head("X", "step", r.Replica, cpuTID(s), sp.StartS)
		t.buf = append(t.buf, `,"dur":`...)
		t.buf = appendUs(t.buf, sp.EndS-sp.StartS)
		t.buf = append(t.buf, `,"args":{`...)
		t.arg("step", r.Step)
		t.buf = append(t.buf, ',')
		t.arg("tokens", int64(r.Tokens))
		t.buf = append(t.buf, ',')
		t.arg("prefill_tokens", int64(r.PrefillTokens))
		t.buf = append(t.buf, ',')
		t.arg("prefill_seqs", int64(r.PrefillSeqs))
		t.buf = append(t.buf, ',')
		t.arg("decode_seqs", int64(r.DecodeSeqs))
		for c := cost.Component(0); c < cost.NumComponents; c++ {
			if ms := sp.Cost.Ms[c]; ms != 0 {
				t.buf = append(t.buf, `,"`...)
				t.buf = append(t.buf, c.String()...)
				t.buf = append(t.buf, `_ms":`...)
				t.buf = strconv.AppendFloat(t.buf, ms, 'g', 6, 64)
			}
		}
		t.buf = append(t.buf, `,"kernels":`...)
		t.buf = strconv.AppendInt(t.buf, int64(sp.Cost.Kernels), 10)
		t.buf = append(t.buf, `,"cuda_graph":`...)
		t.buf = strconv.AppendBool(t.buf, sp.Cost.Graph)
		t.buf = append(t.buf, "}}"...)
		// The step's parts as they show in its wall time.
		sp.Cost.Attribute(sp.Async, sp.Overlap, &t.part)
		hb, ha := t.part[cost.CompHostBefore]/1e3, t.part[cost.CompHostAfter]/1e3
		fwdStart, fwdEnd := sp.StartS+hb, sp.EndS-ha
		issueEnd := min(fwdEnd, fwdStart+sp.Cost.Ms[cost.CompLaunch]/1e3)
		t.slice("host_before", r.Replica, cpuTID(s), sp.StartS, fwdStart)
		t.slice("issue", r.Replica, cpuTID(s), fwdStart, issueEnd)
		// A pipeline stage before the last lets the batch go once issued.
		t.slice("wait_gpu", r.Replica, cpuTID(s), issueEnd, min(fwdEnd, sp.CPUEndS))
		t.slice("host_after", r.Replica, cpuTID(s), fwdEnd, sp.EndS)
		// The GPU ends the forward; it was busy for the device time of it.
		if dev := sp.Cost.DeviceMs() / 1e3; fwdEnd > fwdStart {
			t.head("X", "gpu", r.Replica, gpuTID(s), fwdStart)
			t.buf = append(t.buf, `,"dur":`...)
			t.buf = appendUs(t.buf, fwdEnd-fwdStart)
			t.buf = append(t.buf, `,"args":{"busy_ms":`...)
			t.buf = strconv.AppendFloat(t.buf, dev*1e3, 'g', 6, 64)
			t.buf = append(t.buf, `,"idle_ms":`...)
			t.buf = strconv.AppendFloat(t.buf, max(0, (fwdEnd-fwdStart-dev)*1e3), 'g', 6, 64)
			t.buf = append(t.buf, "}}"...)
		}
	}
	t.head("C", "engine", r.Replica, 0, r.StartS)
	t.buf = append(t.buf, `,"args":{`...)
	t.arg("kv_blocks_used", int64(r.KVBlocksUsed))
	t.buf = append(t.buf, ',')
	t.arg("running", int64(r.Running))
	t.buf = append(t.buf, ',')
	t.arg("waiting", int64(r.Waiting))
	t.buf = append(t.buf, "}}"...)
	t.flush()
}

// slice writes a complete event from startS to endS, if it lasts.
func (t *chromeTrace) slice(name string, pid, tid int, startS, endS float64) {
	if !(endS > startS) {
		return
	}
	t.head("X", name, pid, tid, startS)
	t.buf = append(t.buf, `,"dur":`...)
	t.buf = appendUs(t.buf, endS-startS)
	t.buf = append(t.buf, '}')
}

// observeTransfer implements transferObserver: a KV transfer's async span
// on its link, from the end of the prefill (waiting for decode blocks) to
// its arrival.
func (t *chromeTrace) observeTransfer(x *transfer, id int32, endS float64) {
	span := func(ph, name string, tsS float64) {
		t.head(ph, name, t.links, x.src, tsS)
		t.buf = append(t.buf, `,"cat":"kv","id":`...)
		t.buf = strconv.AppendInt(t.buf, int64(x.req.ID), 10)
	}
	if x.startS > x.readyS {
		span("b", "kv_wait_for_blocks", x.readyS)
		t.buf = append(t.buf, '}')
		span("e", "kv_wait_for_blocks", x.startS)
		t.buf = append(t.buf, '}')
	}
	span("b", "kv_transfer", x.startS)
	t.buf = append(t.buf, `,"args":{`...)
	t.arg("request", int64(x.req.ID))
	t.buf = append(t.buf, ',')
	t.arg("bytes", int64(x.bytes))
	t.buf = append(t.buf, ',')
	t.arg("decode_instance", int64(x.dst))
	t.buf = append(t.buf, "}}"...)
	span("e", "kv_transfer", endS)
	t.buf = append(t.buf, '}')
	t.flush()
}

// WriteRequest implements RequestSink: the request's async span.
func (t *chromeTrace) WriteRequest(m *runresult.RequestMetrics) error {
	if math.IsNaN(m.FinishS) {
		return t.err // rejected: nothing ran
	}
	id := int64(m.RequestID)
	span := func(ph string, tsS float64) {
		t.head(ph, "request", t.requests, 0, tsS)
		t.buf = append(t.buf, `,"cat":"request","id":`...)
		t.buf = strconv.AppendInt(t.buf, id, 10)
	}
	span("b", m.ArrivalS)
	t.buf = append(t.buf, `,"args":{`...)
	t.arg("prompt_tokens", int64(m.PromptTokens))
	t.buf = append(t.buf, ',')
	t.arg("output_tokens", int64(m.OutputTokens))
	t.buf = append(t.buf, ',')
	t.arg("preemptions", int64(m.Preemptions))
	t.buf = append(t.buf, "}}"...)
	span("n", m.FirstTokenS)
	t.buf = append(t.buf, `,"args":{"event":"first token"}}`...)
	span("e", m.FinishS)
	t.buf = append(t.buf, '}')
	t.flush()
	return t.err
}

func (t *chromeTrace) flush() {
	if len(t.buf) < 1<<15 {
		return
	}
	t.write()
}

func (t *chromeTrace) write() {
	if t.err == nil {
		_, t.err = t.w.Write(t.buf)
	}
	t.buf = t.buf[:0]
}

// close ends the JSON document.
func (t *chromeTrace) close() error {
	t.buf = append(t.buf, "\n]}\n"...)
	t.write()
	return t.err
}
