package collect

import "context"

// Backend times operators: the synthetic device model or a torch worker.
// Measure returns an error for a failed measurement (the worker died, hung
// or reported an error); the sweep retries the shape and then records it
// as failed.
type Backend interface {
	Measure(ctx context.Context, req *Request) (*Response, error)
	Close() error
}

// Backend names.
const (
	BackendAuto      = "auto"
	BackendSynthetic = "synthetic"
	BackendTorch     = "torch"
)
