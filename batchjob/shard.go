package batchjob

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is task Index of Count: the items at positions Index,
// Index+Count, ... of a list. The zero value is the whole list.
type Shard struct{ Index, Count int }

// ParseShard reads "i/n", as the tasks of a job pass it in --shard.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 <= i < n, e.g. 0/4", s)
	}
	return Shard{Index: i, Count: n}, nil
}

// Whole reports whether the shard is the whole list.
func (s Shard) Whole() bool { return s.Count <= 1 }

// Owns reports whether position i of the list is the shard's.
func (s Shard) Owns(i int) bool { return s.Whole() || i%s.Count == s.Index }

func (s Shard) String() string {
	if s.Whole() {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}
