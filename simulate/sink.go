package simulate

import "github.com/ftk-dev/ftk/runresult"

// RequestSink receives each request's metrics as it finishes (or is
// rejected), in simulated-time order. The pointer is only valid during the
// call.
type RequestSink interface {
	WriteRequest(m *runresult.RequestMetrics) error
}
