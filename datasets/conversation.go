package datasets

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// KindConversation: chat sessions that share system prompts (the
// shared-prefix and sessions workloads).
const KindConversation = "conversation"

// Conversation is a workload of chat sessions whose prompts share content:
// Groups system prompts of SystemTokens tokens each, and sessions of Turns
// turns, each turn adding QuestionTokens user tokens and OutputTokens reply
// tokens to the history that the next turn resends:
//
//	prompt of turn k = SystemTokens + (k-1) x (QuestionTokens + OutputTokens) + QuestionTokens
//
// Each session takes one system prompt. Sessions are dealt their system
// prompts from a shuffled deck holding each prompt UsersPerGroup times,
// reshuffled when used up, so every prompt serves UsersPerGroup sessions
// per deck (SGLang's generated-shared-prefix benchmark: num groups x
// prompts per group). Turn 1 of every session is a shared-prefix request;
// later turns also share the session's history.
type Conversation struct {
	Groups, UsersPerGroup                      int
	SystemTokens, QuestionTokens, OutputTokens int
	Turns                                      int
}

// conversationKeys are the keys of a conversation spec and their fields.
func (c *Conversation) keys() map[string]*int {
	return map[string]*int{"groups": &c.Groups, "users": &c.UsersPerGroup, "system": &c.SystemTokens,
		"question": &c.QuestionTokens, "output": &c.OutputTokens, "turns": &c.Turns}
}

// parseConversation parses
//
//	shared-prefix:groups=G,users=U,system=S,question=Q,output=O
//	sessions:groups=G,users=U,system=S,turns=T,question=Q,output=O
//
// users defaults to 1 and turns (sessions only) to 1; system may be 0 (no
// shared system prompt).
func parseConversation(s string) (Workload, error) {
	kind, body, _ := strings.Cut(s, ":")
	c := Conversation{UsersPerGroup: 1, Turns: 1}
	keys := c.keys()
	usage := func(format string, a ...any) error {
		return fmt.Errorf("workload %q: %s; want %s:groups=G,users=U,system=S,question=Q,output=O%s", s, fmt.Sprintf(format, a...),
			kind, map[bool]string{true: " (turns=T)", false: ""}[kind == "sessions"])
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(body, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		p := keys[k]
		if !ok || p == nil || (k == "turns" && kind != "sessions") {
			return Workload{}, usage("unknown setting %q", kv)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxTokens {
			return Workload{}, usage("%s=%q is not a count", k, v)
		}
		*p, seen[k] = n, true
	}
	for _, k := range []string{"groups", "system", "question", "output"} {
		if !seen[k] {
			return Workload{}, usage("%s is missing", k)
		}
	}
	switch {
	case c.Groups < 1 || c.UsersPerGroup < 1 || c.Turns < 1:
		return Workload{}, usage("groups, users and turns must be >= 1")
	case c.QuestionTokens < 1 || c.OutputTokens < 1:
		return Workload{}, usage("question and output must be >= 1 tokens")
	case int64(c.SystemTokens)+int64(c.Turns)*int64(c.QuestionTokens+c.OutputTokens) > maxTokens:
		return Workload{}, usage("the last turn's prompt is too long")
	}
	return Workload{Name: s, Kind: KindConversation, Conversation: c}, nil
}

// PromptTokens is the prompt of turn (from 1) of a session.
func (c *Conversation) PromptTokens(turn int) int {
	return c.SystemTokens + (turn-1)*(c.QuestionTokens+c.OutputTokens) + c.QuestionTokens
}

// deck deals system prompts to sessions: a seeded shuffle of every group
// UsersPerGroup times, reshuffled when used up.
//
// A deck of up to maxDeckCards cards is held and shuffled in memory. A
// larger one (groups=100000,users=100000 is 10^10 cards: 80 GB held) is
// never made: its order is a keyed pseudo-random permutation of the card
// positions (a Feistel network over the positions, cycle-walked into
// range), new keys for every deck, so dealing takes constant memory
// whatever the deck's size and a run of n sessions deals n cards.
type deck struct {
	cards []int
	next  int
	rng   *rand.Rand
	// The permuted deck (cards nil): size cards, users of each group,
	// dealt positions of the current deck and the keys of its order.
	size, users, dealt uint64
	half               uint
	keys               [feistelRounds]uint64
}

// maxDeckCards is the largest deck held in memory (8 MB of cards).
const maxDeckCards = 1 << 20

// feistelRounds is the rounds of the permuted deck's Feistel network
// (four make a pseudo-random permutation, Luby-Rackoff).
const feistelRounds = 4

func newDeck(c *Conversation, rng *rand.Rand) *deck {
	size := uint64(c.Groups) * uint64(c.UsersPerGroup)
	if size > maxDeckCards {
		return newPermutedDeck(size, uint64(c.UsersPerGroup), rng)
	}
	d := &deck{cards: make([]int, 0, size), rng: rng}
	for g := range c.Groups {
		for range c.UsersPerGroup {
			d.cards = append(d.cards, g)
		}
	}
	d.next = len(d.cards)
	return d
}

// newPermutedDeck is a deck of size cards, users of each group, dealt in
// a keyed permuted order (see deck).
func newPermutedDeck(size, users uint64, rng *rand.Rand) *deck {
	d := &deck{rng: rng, size: size, users: users}
	for d.half = 1; uint64(1)<<(2*d.half) < size; d.half++ {
	}
	d.dealt = size // keys drawn at the first deal
	return d
}

func (d *deck) deal() int {
	if d.cards == nil {
		return d.dealPermuted()
	}
	if d.next == len(d.cards) {
		d.rng.Shuffle(len(d.cards), func(i, j int) { d.cards[i], d.cards[j] = d.cards[j], d.cards[i] })
		d.next = 0
	}
	d.next++
	return d.cards[d.next-1]
}

// dealPermuted deals the next card of a permuted deck: the group of the
// card at the permuted position.
func (d *deck) dealPermuted() int {
	if d.dealt == d.size {
		for i := range d.keys {
			d.keys[i] = d.rng.Uint64()
		}
		d.dealt = 0
	}
	x := d.dealt
	d.dealt++
	for { // cycle-walk: the network permutes [0, 4^half), at most 4 x size
		x = d.permute(x)
		if x < d.size {
			return int(x / d.users)
		}
	}
}

// permute is the Feistel network over 2 x half bits.
func (d *deck) permute(x uint64) uint64 {
	mask := uint64(1)<<d.half - 1
	l, r := x>>d.half, x&mask
	for _, k := range d.keys {
		l, r = r, l^(mix64(r^k)&mask)
	}
	return l<<d.half | r
}

// mix64 is SplitMix64's finaliser, the Feistel round function.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// fill sets r's lengths and content for turn (from 1) of session (from
// 0), whose system prompt is group.
func (c *Conversation) fill(r *spec.Request, session, turn, group int) {
	r.PromptTokens, r.OutputTokens = c.PromptTokens(turn), c.OutputTokens
	r.PrefixGroup, r.PrefixTokens = uint64(group)+1, c.SystemTokens
	if c.SystemTokens == 0 {
		r.PrefixGroup = 0
	}
	r.Session, r.Turn = 0, 0
	if c.Turns > 1 {
		r.Session, r.Turn = uint64(session)+1, turn
	}
}
