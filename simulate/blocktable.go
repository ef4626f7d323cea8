package simulate

// blockTable maps a block hash (never 0) to a block index: an open
// addressing table with linear probing and backward-shift deletion, sized
// once for every block of the cache to be cached at a load of at most one
// half. It does in a few nanoseconds what a Go map does in tens, which the
// prefix cache needs several times per block.
type blockTable struct {
	keys []uint64 // 0: empty slot
	vals []int32
	mask uint64
}

func newBlockTable(blocks int) blockTable {
	n := 16
	for n < 2*blocks {
		n *= 2
	}
	return blockTable{keys: make([]uint64, n), vals: make([]int32, n), mask: uint64(n - 1)}
}

// slot is where the probe for h starts. Hashes are already mixed
// (blockContent.blockHash), so their low bits are uniform.
func (t *blockTable) slot(h uint64) uint64 { return h & t.mask }

// get returns the block stored under h, or -1.
func (t *blockTable) get(h uint64) int32 {
	for i := t.slot(h); ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case h:
			return t.vals[i]
		case 0:
			return -1
		}
	}
}

// set stores b under h, replacing what was there.
func (t *blockTable) set(h uint64, b int32) {
	i := t.slot(h)
	for t.keys[i] != 0 && t.keys[i] != h {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = h, b
}

// remove deletes h, which must be present, shifting later entries of its
// probe run back so that no tombstones are needed.
func (t *blockTable) remove(h uint64) {
	i := t.slot(h)
	for t.keys[i] != h {
		i = (i + 1) & t.mask
	}
	for {
		t.keys[i] = 0
		j := i
		for {
			j = (j + 1) & t.mask
			k := t.keys[j]
			if k == 0 {
				return
			}
			// Move k back into the hole at i unless its home slot lies
			// cyclically in (i, j].
			home := t.slot(k)
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				t.keys[i], t.vals[i] = k, t.vals[j]
				i = j
				break
			}
		}
	}
}
