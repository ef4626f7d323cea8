package spec

// Request is one request of a trace.
type Request struct {
	ID           int     // position in the trace, 0-based
	ArrivalS     float64 // arrival time, seconds from the trace start
	PromptTokens int
	OutputTokens int
	// Session groups requests of one conversation; PrefixHash identifies a
	// shared prompt prefix. Both are optional (empty when unknown).
	Session    string
	PrefixHash string
}
