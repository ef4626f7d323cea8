package simulate

// blockTable maps a block hash (never 0) to a block index: an open
// addressing table with linear probing and backward-shift deletion, sized
// once for every block of the cache to be cached at a load of at most one
// half. Keys and values sit side by side, so a probe touches one cache
// line. It does in a few nanoseconds what a Go map does in tens.
type blockTable struct {
	slots []tableSlot
	mask  uint64
}

type tableSlot struct {
	key uint64 // 0: empty
	val int32
}

func newBlockTable(blocks int) blockTable {
	n := 16
	for n < 2*blocks {
		n *= 2
	}
	return blockTable{slots: make([]tableSlot, n), mask: uint64(n - 1)}
}

// slot is where the probe for h starts. Hashes are already mixed
// (blockContent.blockHash), so their low bits are uniform.
func (t *blockTable) slot(h uint64) uint64 { return h & t.mask }

// find returns the slot holding h, or the empty slot where it would go.
func (t *blockTable) find(h uint64) uint64 {
	i := t.slot(h)
	for k := t.slots[i].key; k != h && k != 0; k = t.slots[i].key {
		i = (i + 1) & t.mask
	}
	return i
}

// get returns the block stored under h, or -1.
func (t *blockTable) get(h uint64) int32 {
	if s := &t.slots[t.find(h)]; s.key == h {
		return s.val
	}
	return -1
}

// set stores b under h, replacing what was there.
func (t *blockTable) set(h uint64, b int32) {
	t.slots[t.find(h)] = tableSlot{h, b}
}

// getOrSet returns the block stored under h, or stores b there and
// returns -1.
func (t *blockTable) getOrSet(h uint64, b int32) int32 {
	s := &t.slots[t.find(h)]
	if s.key == h {
		return s.val
	}
	*s = tableSlot{h, b}
	return -1
}

// removeIf returns the block stored under h, which must be present; if it
// is b, it replaces it with next, or deletes h when next is -1.
func (t *blockTable) removeIf(h uint64, b, next int32) int32 {
	i := t.find(h)
	first := t.slots[i].val
	switch {
	case first != b:
	case next >= 0:
		t.slots[i].val = next
	default:
		t.removeAt(i)
	}
	return first
}

// remove deletes h, which must be present.
func (t *blockTable) remove(h uint64) { t.removeAt(t.find(h)) }

// removeAt empties slot i, shifting later entries of its probe run back
// so that no tombstones are needed.
func (t *blockTable) removeAt(i uint64) {
	for {
		t.slots[i].key = 0
		j := i
		for {
			j = (j + 1) & t.mask
			k := t.slots[j].key
			if k == 0 {
				return
			}
			// Move k back into the hole at i unless its home slot lies
			// cyclically in (i, j].
			home := t.slot(k)
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				t.slots[i] = t.slots[j]
				i = j
				break
			}
		}
	}
}
