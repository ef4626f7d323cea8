package simulate

// blockContent describes what a request's tokens are without holding them:
// enough to name each full KV block's content, so that the prefix cache
// hashes blocks, never tokens. A request's token stream (prompt, then
// output) is laid out as:
//
//   - with content ids (ids, as the Mooncake trace's hash_ids): the first
//     idCovered prompt tokens in runs of idTokens, each run named by its
//     id; a block is named by the ids it overlaps and its offset in them;
//   - else, with a shared prefix (group): its first groupTokens tokens are
//     the group's, shared with every request of the group;
//   - with a session: every position after the group prefix is the
//     session's, so a turn whose prompt starts with the earlier turns'
//     prompts and outputs (a chat history) shares them;
//   - everything else is the request's own (uid).
//
// The hash of block j chains the hash of block j-1 with block j's name, as
// vLLM's hash_block_tokens chains the parent hash with the block's tokens;
// two requests' blocks match exactly when everything before and in them
// is named alike. Hashes are 64-bit (splitmix64 finaliser); a collision
// among a run's blocks has a probability of about blocks^2 / 2^65.
type blockContent struct {
	uid         uint64
	group       uint64
	groupTokens int32
	session     uint64
	ids         []uint64
	idTokens    int32
	idCovered   int32
}

// Domain constants keep equal keys of different kinds apart.
const (
	domainUID     = 0x243f6a8885a308d3
	domainGroup   = 0x13198a2e03707344
	domainSession = 0xa4093822299f31d0
	domainIDs     = 0x082efa98ec4e6c89
	golden        = 0x9e3779b97f4a7c15
)

// mix64 is the splitmix64 finaliser: a bijection of uint64 whose output
// bits each depend on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// shared reports whether block j (blockSize tokens each) can be held by
// other requests: it is named by hash ids, a shared prefix or a session.
// The rest, from the first block of the request's own, is private.
func (c *blockContent) shared(j, blockSize int32) bool {
	end := (j + 1) * blockSize
	return c.session != 0 || end <= c.idCovered || (c.group != 0 && end <= c.groupTokens)
}

// blockHash is the hash of block j (blockSize tokens each) whose parent
// block hashes to parent (0 for the first block). It is never 0.
func (c *blockContent) blockHash(parent uint64, j, blockSize int32) uint64 {
	start, end := j*blockSize, (j+1)*blockSize
	var name uint64
	switch {
	case end <= c.idCovered:
		first, last := start/c.idTokens, (end-1)/c.idTokens
		name = domainIDs
		for k := first; k <= last; k++ {
			name = mix64(name ^ c.ids[k])
		}
		name += uint64(start-first*c.idTokens) * golden
	case c.group != 0 && end <= c.groupTokens:
		name = (c.group ^ domainGroup) + uint64(j)*golden
	case c.session != 0:
		name = (c.session ^ domainSession) + uint64(j)*golden
	default:
		name = (c.uid ^ domainUID) + uint64(j)*golden
	}
	h := mix64(parent ^ mix64(name))
	if h == 0 {
		h = 1
	}
	return h
}
