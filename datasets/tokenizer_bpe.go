package datasets

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// modelJSON is the model section of tokenizer.json.
type modelJSON struct {
	Type                    string            `json:"type"`
	Vocab                   map[string]uint32 `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	FuseUnk                 bool              `json:"fuse_unk"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Dropout                 *float64          `json:"dropout"`
}

func parseModel(raw json.RawMessage) (tokenModel, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, unsupported("no model")
	}
	var kind struct {
		Type   string          `json:"type"`
		Merges json.RawMessage `json:"merges"`
	}
	if err := json.Unmarshal(raw, &kind); err != nil {
		return nil, err
	}
	if kind.Type == "" && kind.Merges != nil {
		kind.Type = "BPE"
	}
	if kind.Type != "BPE" && kind.Type != "WordLevel" {
		return nil, unsupported("model type %q", kind.Type)
	}
	var m modelJSON
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	switch kind.Type {
	case "BPE":
		return newBPE(&m)
	case "WordLevel":
		w := &wordLevel{vocab: m.Vocab}
		if m.UnkToken != nil {
			_, w.hasUnk = m.Vocab[*m.UnkToken]
		}
		return w, nil
	}
	return nil, unsupported("model type %q", m.Type)
}

// wordLevel maps each piece to one token (or the unknown token).
type wordLevel struct {
	vocab  map[string]uint32
	hasUnk bool
}

func (w *wordLevel) count(p string) (int, error) {
	if _, ok := w.vocab[p]; ok || w.hasUnk {
		return 1, nil
	}
	return 0, fmt.Errorf("WordLevel tokenizer: %q is not in the vocabulary and there is no unk_token", p)
}

// bpe is a byte-pair-encoding model with Hugging Face's merge order: the
// lowest-rank adjacent pair merges first, the leftmost among equals.
type bpe struct {
	vocab        map[string]uint32
	merges       map[uint64]uint64 // pair (a<<32|b) -> rank<<32|new id
	unk          uint32
	hasUnk       bool
	prefix       string
	suffix       string
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	byteIDs      [256]uint32
	byteOK       [256]bool
	cache        map[string]int
	syms         []bpeSymbol // scratch
	queue        mergeQueue  // scratch
}

// The word cache holds up to bpeCacheMax words of at most bpeCacheWord
// bytes (long pieces, such as whole messages under a Llama 2 tokenizer with
// no pre-tokenizer, are not worth keeping).
const (
	bpeCacheMax  = 1 << 16
	bpeCacheWord = 64
)

func newBPE(m *modelJSON) (*bpe, error) {
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, unsupported("BPE dropout %g (random, not countable)", *m.Dropout)
	}
	b := &bpe{
		vocab:        m.Vocab,
		merges:       make(map[uint64]uint64, len(m.Merges)),
		fuseUnk:      m.FuseUnk,
		byteFallback: m.ByteFallback,
		ignoreMerges: m.IgnoreMerges,
		cache:        map[string]int{},
	}
	if m.UnkToken != nil {
		b.unk, b.hasUnk = m.Vocab[*m.UnkToken]
		if !b.hasUnk {
			return nil, fmt.Errorf("unk_token %q is not in the vocabulary", *m.UnkToken)
		}
	}
	if m.ContinuingSubwordPrefix != nil {
		b.prefix = *m.ContinuingSubwordPrefix
	}
	if m.EndOfWordSuffix != nil {
		b.suffix = *m.EndOfWordSuffix
	}
	if b.byteFallback {
		for i := range 256 {
			b.byteIDs[i], b.byteOK[i] = m.Vocab[fmt.Sprintf("<0x%02X>", i)]
		}
	}
	for rank, raw := range m.Merges {
		var left, right string
		var s string
		var pair []string
		if err := json.Unmarshal(raw, &s); err == nil {
			parts := strings.Split(s, " ")
			if len(parts) != 2 {
				return nil, fmt.Errorf("merge %d %q: want two tokens separated by one space", rank+1, s)
			}
			left, right = parts[0], parts[1]
		} else if err := json.Unmarshal(raw, &pair); err == nil && len(pair) == 2 {
			left, right = pair[0], pair[1]
		} else {
			return nil, fmt.Errorf("merge %d: want \"a b\" or [\"a\", \"b\"], got %s", rank+1, raw)
		}
		a, okA := m.Vocab[left]
		c, okB := m.Vocab[right]
		if !okA || !okB {
			return nil, fmt.Errorf("merge %d (%q %q): token not in the vocabulary", rank+1, left, right)
		}
		merged := left + strings.TrimPrefix(right, b.prefix)
		id, ok := m.Vocab[merged]
		if !ok {
			return nil, fmt.Errorf("merge %d (%q %q): result %q not in the vocabulary", rank+1, left, right, merged)
		}
		// A repeated pair keeps its last rank, as Hugging Face's map does.
		b.merges[uint64(a)<<32|uint64(c)] = uint64(rank)<<32 | uint64(id)
	}
	return b, nil
}

func (b *bpe) count(word string) (int, error) {
	if word == "" {
		return 0, nil
	}
	if b.ignoreMerges {
		if _, ok := b.vocab[word]; ok {
			return 1, nil
		}
	}
	if n, ok := b.cache[word]; ok {
		return n, nil
	}
	n := b.mergeWord(word)
	if len(word) <= bpeCacheWord {
		if len(b.cache) >= bpeCacheMax {
			clear(b.cache)
		}
		b.cache[word] = n
	}
	return n, nil
}

// bpeSymbol is a symbol of a word being merged; len 0 marks a merged-away
// symbol.
type bpeSymbol struct {
	id         uint32
	prev, next int
	len        int
}

// mergeWord splits word into initial symbols (characters, byte fallback or
// unknown) and merges them; it returns the number of tokens.
func (b *bpe) mergeWord(w string) int {
	syms := b.syms[:0]
	defer func() { b.syms = syms[:0] }()
	add := func(id uint32, n int) {
		syms = append(syms, bpeSymbol{id: id, prev: len(syms) - 1, next: len(syms) + 1, len: n})
	}
	unkLen := 0 // pending unknown bytes, fused or not
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		s := w[i : i+size]
		if i > 0 && b.prefix != "" {
			s = b.prefix + s
		}
		if i+size == len(w) && b.suffix != "" {
			s += b.suffix
		}
		if id, ok := b.vocab[s]; ok {
			if unkLen > 0 {
				add(b.unk, unkLen)
				unkLen = 0
			}
			add(id, size)
		} else if b.byteFallback && b.bytesKnown(s) {
			for j := 0; j < len(s); j++ {
				add(b.byteIDs[s[j]], 1)
			}
		} else if b.hasUnk {
			if unkLen > 0 && !b.fuseUnk {
				add(b.unk, unkLen)
				unkLen = 0
			}
			unkLen += size
		}
		i += size
	}
	if unkLen > 0 {
		add(b.unk, unkLen)
	}
	if len(syms) == 0 {
		return 0
	}
	syms[len(syms)-1].next = -1

	q := &b.queue
	q.items = q.items[:0]
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := b.merges[uint64(syms[i].id)<<32|uint64(syms[i+1].id)]; ok {
			q.push(bpeMerge{pos: i, rank: uint32(m >> 32), newID: uint32(m)})
		}
	}
	count := len(syms)
	for len(q.items) > 0 {
		top := q.pop()
		cur := &syms[top.pos]
		if cur.len == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		m, ok := b.merges[uint64(cur.id)<<32|uint64(right.id)]
		if !ok || uint32(m) != top.newID {
			continue // stale entry
		}
		cur.id = top.newID
		cur.len += right.len
		syms[cur.next].len = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		count--
		if cur.prev >= 0 {
			if m, ok := b.merges[uint64(syms[cur.prev].id)<<32|uint64(cur.id)]; ok {
				q.push(bpeMerge{pos: cur.prev, rank: uint32(m >> 32), newID: uint32(m)})
			}
		}
		if cur.next >= 0 {
			if m, ok := b.merges[uint64(cur.id)<<32|uint64(syms[cur.next].id)]; ok {
				q.push(bpeMerge{pos: top.pos, rank: uint32(m >> 32), newID: uint32(m)})
			}
		}
	}
	return count
}

// bytesKnown reports whether every byte of s has a <0xXX> token.
func (b *bpe) bytesKnown(s string) bool {
	for j := 0; j < len(s); j++ {
		if !b.byteOK[s[j]] {
			return false
		}
	}
	return true
}

// bpeMerge is a candidate merge of the symbol at pos with its next.
type bpeMerge struct {
	pos   int
	rank  uint32
	newID uint32
}

// mergeQueue is a binary min-heap of candidate merges by rank, then
// position.
type mergeQueue struct{ items []bpeMerge }

func (a bpeMerge) before(b bpeMerge) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

func (q *mergeQueue) push(m bpeMerge) {
	q.items = append(q.items, m)
	h := q.items
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *mergeQueue) pop() bpeMerge {
	h := q.items
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h[r].before(h[l]) {
			c = r
		}
		if !h[c].before(h[i]) {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	q.items = h
	return top
}
