package simulate

// The multi-turn presets of docs/kv-offloading.md, sessions workloads
// (datasets.Conversation) whose history outgrows a GPU's KV cache. Their
// shapes are guesses, stated as such there: chat is 10 turns of 200-token
// questions and replies over 2,000-token system prompts; agent is 16 turns
// of 800-token tool results and 200-token replies over 6,000-token system
// prompts (tool definitions).
const (
	chatPreset  = "sessions:groups=8,users=64,system=2000,turns=10,question=200,output=200"
	agentPreset = "sessions:groups=4,users=64,system=6000,turns=16,question=800,output=200"
)
