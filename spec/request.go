package spec

// Request is one request of a trace.
type Request struct {
	ID           int     // position in the trace, 0-based
	ArrivalS     float64 // arrival time, seconds from the trace start
	PromptTokens int
	OutputTokens int

	// What the tokens are, as far as a prefix cache cares (all optional;
	// zero when unknown). Ids name content without holding it: equal ids
	// mean equal tokens.
	//
	// Session names a conversation whose turns each resend the history:
	// the prompt of turn k starts with the prompts and outputs of turns
	// 1..k-1. Turn numbers the turns of a session from 1.
	Session uint64
	Turn    int
	// PrefixGroup names a prompt prefix of PrefixTokens tokens (a system
	// prompt) that every request of the group starts with.
	PrefixGroup  uint64
	PrefixTokens int
	// HashIDs name the prompt's tokens in runs of HashBlockTokens tokens,
	// as the public Mooncake trace does (512 tokens a run): two requests
	// share their runs up to the first position where the ids differ.
	HashIDs         []uint64
	HashBlockTokens int
}
