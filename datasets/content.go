package datasets

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/ftk-dev/ftk/spec"
)

// Shared-content columns of a trace CSV: what a prefix cache can reuse,
// named without the tokens (spec.Request documents the fields). All are
// optional.
//
//	session_id         conversation id: every turn's prompt starts with the
//	                   earlier turns' prompts and outputs
//	turn               turn within the session, from 1
//	prefix_hash        shared-prefix (system prompt) group id
//	prefix_tokens      tokens of that prefix, 0..num_prefill_tokens
//	hash_ids           content ids of the prompt's runs of hash_block_tokens
//	                   tokens, separated by spaces (the Mooncake trace's
//	                   hash_ids)
//	hash_block_tokens  tokens per hash id (default 512, as Mooncake's)
//
// Ids are unsigned 64-bit decimals; any other text is hashed to one
// (FNV-1a), so session "conv-17" works and reads back as its number.
// An empty field means none.
const (
	ColSession         = "session_id"
	ColTurn            = "turn"
	ColPrefixHash      = "prefix_hash"
	ColPrefixTokens    = "prefix_tokens"
	ColHashIDs         = "hash_ids"
	ColHashBlockTokens = "hash_block_tokens"
)

// MooncakeHashBlockTokens is the tokens per hash id of the public Mooncake
// trace (kvcache-ai/Mooncake, FAST'25 traces: "block size 512").
const MooncakeHashBlockTokens = 512

// ContentID turns a session or prefix id written as text into a number: a
// decimal uint64 is itself, other text its FNV-1a hash, empty text 0.
func ContentID(s []byte) uint64 {
	s = bytes.TrimSpace(s)
	if len(s) == 0 {
		return 0
	}
	if v, err := strconv.ParseUint(string(s), 10, 64); err == nil {
		return v
	}
	h := fnv.New64a()
	h.Write(s)
	if v := h.Sum64(); v != 0 {
		return v
	}
	return 1
}

// contentColumns are the positions of the shared-content columns; -1 when
// absent.
type contentColumns struct {
	session, turn, prefix, prefixTokens, hashIDs, hashBlock int
}

func noContentColumns() contentColumns { return contentColumns{-1, -1, -1, -1, -1, -1} }

// match records column i if name is a content column.
func (c *contentColumns) match(name string, i int) {
	switch name {
	case ColSession:
		c.session = i
	case ColTurn:
		c.turn = i
	case ColPrefixHash:
		c.prefix = i
	case ColPrefixTokens:
		c.prefixTokens = i
	case ColHashIDs:
		c.hashIDs = i
	case ColHashBlockTokens:
		c.hashBlock = i
	}
}

// parse fills r's content fields from the split line; on error it returns
// the offending column.
func (c *contentColumns) parse(r *spec.Request, f *fieldSplitter) (int, error) {
	if c.session >= 0 {
		r.Session = ContentID(f.field(c.session))
	}
	if c.prefix >= 0 {
		r.PrefixGroup = ContentID(f.field(c.prefix))
	}
	var err error
	if c.turn >= 0 {
		if r.Turn, err = parseCount(f.field(c.turn), 1); err != nil {
			return c.turn, err
		}
	}
	if c.prefixTokens >= 0 {
		if r.PrefixTokens, err = parseCount(f.field(c.prefixTokens), 0); err != nil {
			return c.prefixTokens, err
		}
		switch {
		case r.PrefixTokens > r.PromptTokens:
			return c.prefixTokens, fmt.Errorf("%d is more than the %d prompt tokens", r.PrefixTokens, r.PromptTokens)
		case r.PrefixTokens > 0 && r.PrefixGroup == 0:
			return c.prefixTokens, fmt.Errorf("%d shared tokens need a %s naming the prefix", r.PrefixTokens, ColPrefixHash)
		}
	}
	if c.hashIDs >= 0 {
		if r.HashIDs, err = parseHashIDs(f.field(c.hashIDs)); err != nil {
			return c.hashIDs, err
		}
		if len(r.HashIDs) > 0 {
			r.HashBlockTokens = MooncakeHashBlockTokens
		}
	}
	if c.hashBlock >= 0 && len(bytes.TrimSpace(f.field(c.hashBlock))) > 0 {
		if r.HashBlockTokens, err = parseTokens(f.field(c.hashBlock)); err != nil {
			return c.hashBlock, err
		}
	}
	return 0, nil
}

// parseCount parses an optional non-negative integer (empty is 0); a
// non-zero value must be at least lo.
func parseCount(b []byte, lo int) (int, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return 0, nil
	}
	v, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || v < 0 || (v != 0 && v < lo) || v > maxTokens {
		return 0, fmt.Errorf("must be an integer >= %d, got %q", lo, b)
	}
	return v, nil
}

// parseHashIDs parses space-separated unsigned decimal ids.
func parseHashIDs(b []byte) ([]uint64, error) {
	fields := bytes.Fields(b)
	if len(fields) == 0 {
		return nil, nil
	}
	ids := make([]uint64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("id %d: want an unsigned integer, got %q", i+1, f)
		}
		ids[i] = v
	}
	return ids, nil
}

// contentPresent says which content columns a set of requests needs.
type contentPresent struct{ session, turn, prefix, hashIDs bool }

func (p *contentPresent) see(r *spec.Request) {
	p.session = p.session || r.Session != 0
	p.turn = p.turn || r.Turn != 0
	p.prefix = p.prefix || r.PrefixGroup != 0 || r.PrefixTokens != 0
	p.hashIDs = p.hashIDs || len(r.HashIDs) > 0
}

// header appends the names of the present columns.
func (p *contentPresent) header(h []string) []string {
	if p.session {
		h = append(h, ColSession)
	}
	if p.turn {
		h = append(h, ColTurn)
	}
	if p.prefix {
		h = append(h, ColPrefixHash, ColPrefixTokens)
	}
	if p.hashIDs {
		h = append(h, ColHashIDs, ColHashBlockTokens)
	}
	return h
}

// appendRow appends r's present content fields, each after a comma.
func (p *contentPresent) appendRow(b []byte, r *spec.Request) []byte {
	num := func(b []byte, v uint64) []byte {
		b = append(b, ',')
		if v == 0 {
			return b
		}
		return strconv.AppendUint(b, v, 10)
	}
	if p.session {
		b = num(b, r.Session)
	}
	if p.turn {
		b = num(b, uint64(r.Turn))
	}
	if p.prefix {
		b = num(b, r.PrefixGroup)
		b = num(b, uint64(r.PrefixTokens))
	}
	if p.hashIDs {
		b = append(b, ',')
		for i, id := range r.HashIDs {
			if i > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendUint(b, id, 10)
		}
		b = num(b, uint64(r.HashBlockTokens))
	}
	return b
}

// checkContent checks a request's content fields as ReadTrace would.
func checkContent(r *spec.Request) error {
	switch {
	case r.Turn < 0:
		return fmt.Errorf("turn %d is negative", r.Turn)
	case r.PrefixTokens < 0 || r.PrefixTokens > r.PromptTokens:
		return fmt.Errorf("prefix tokens %d out of range [0, %d prompt tokens]", r.PrefixTokens, r.PromptTokens)
	case r.PrefixTokens > 0 && r.PrefixGroup == 0:
		return errors.New("prefix tokens without a prefix group")
	case len(r.HashIDs) > 0 && r.HashBlockTokens < 1:
		return fmt.Errorf("hash ids with %d tokens per id", r.HashBlockTokens)
	}
	return nil
}
