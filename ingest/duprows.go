package ingest

import "hash/maphash"

// rowSet remembers the records of one file by a 128-bit hash of their
// cells (two independently seeded 64-bit hashes), to drop exact duplicate
// rows: a sweep appended twice, or rows pasted twice. A false match needs a
// 128-bit collision.
type rowSet struct {
	a, b maphash.Hash
	seen map[[2]uint64]struct{}
}

func newRowSet() *rowSet {
	s := &rowSet{seen: map[[2]uint64]struct{}{}}
	s.a.SetSeed(maphash.MakeSeed())
	s.b.SetSeed(maphash.MakeSeed())
	return s
}

// add records the row's cells and reports whether no earlier row had
// exactly the same ones.
func (s *rowSet) add(fields [][]byte) bool {
	s.a.Reset()
	s.b.Reset()
	var n [4]byte
	for _, f := range fields {
		l := len(f)
		n = [4]byte{byte(l), byte(l >> 8), byte(l >> 16), byte(l >> 24)} // length-prefixed: "a,bc" != "ab,c"
		s.a.Write(n[:])
		s.a.Write(f)
		s.b.Write(n[:])
		s.b.Write(f)
	}
	k := [2]uint64{s.a.Sum64(), s.b.Sum64()}
	if _, dup := s.seen[k]; dup {
		return false
	}
	s.seen[k] = struct{}{}
	return true
}
