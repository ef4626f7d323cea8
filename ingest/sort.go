package ingest

import (
	"cmp"
	"slices"
)

// The samples of a file are ordered by operator, model, the rest of the
// key and variant (a "bucket"), then features, conditions, source and
// line. Strings compare by their rank in the run's strTable, so sorting
// is integer work: a counting sort by bucket, then a sort of each bucket.

// bucket is the model, predictor key and variant of a sample: the first
// part of its order.
type bucket struct {
	op, model, meas, gctx, rpath int32
	tp, ep, local, workers       int32
	cross                        bool
	variant                      uint8
}

func bucketOf(r *record) bucket {
	return bucket{r.op, r.model, r.meas, r.gctx, r.rpath, r.tp, r.ep, r.local, r.workers, r.cross, r.variant}
}

// sameShape reports whether two samples of one file measure one shape:
// same bucket, features and conditions.
func sameShape(a, b *record) bool {
	return a.nf == b.nf && a.f == b.f && a.cond == b.cond && bucketOf(a) == bucketOf(b)
}

// sortRecords orders the samples of one file in place. rank gives the
// lexical rank of strTable ids, srcRank that of input paths.
func sortRecords(recs []*record, rank, srcRank []int32) {
	ids := map[bucket]uint32{}
	var keys []bucket
	bid := make([]uint32, len(recs))
	var last bucket
	var lastID uint32
	for i, r := range recs {
		k := bucketOf(r)
		if i == 0 || k != last {
			id, ok := ids[k]
			if !ok {
				id = uint32(len(keys))
				ids[k] = id
				keys = append(keys, k)
			}
			last, lastID = k, id
		}
		bid[i] = lastID
	}
	order := sortedIndex(len(keys), func(i, j int) int {
		a, b := &keys[i], &keys[j]
		if a.op != b.op {
			return cmp.Compare(rank[a.op], rank[b.op])
		}
		if a.model != b.model {
			return cmp.Compare(rank[a.model], rank[b.model])
		}
		if a.meas != b.meas {
			return cmp.Compare(rank[a.meas], rank[b.meas])
		}
		for _, p := range [...][2]int32{{a.tp, b.tp}, {a.ep, b.ep}, {a.local, b.local}} {
			if p[0] != p[1] {
				return cmp.Compare(p[0], p[1])
			}
		}
		if a.gctx != b.gctx {
			return cmp.Compare(rank[a.gctx], rank[b.gctx])
		}
		if a.rpath != b.rpath {
			return cmp.Compare(rank[a.rpath], rank[b.rpath])
		}
		if a.workers != b.workers {
			return cmp.Compare(a.workers, b.workers)
		}
		if a.cross != b.cross {
			if b.cross { // intra-node first
				return -1
			}
			return 1
		}
		return cmp.Compare(a.variant, b.variant)
	})
	pos := make([]int, len(keys)) // bucket id -> position in order
	for p, id := range order {
		pos[id] = p
	}
	start := make([]int, len(keys)+1)
	for _, id := range bid {
		start[pos[id]+1]++
	}
	for p := 1; p <= len(keys); p++ {
		start[p] += start[p-1]
	}
	next := append([]int(nil), start[:len(keys)]...)
	sorted := make([]*record, len(recs))
	for i, r := range recs {
		p := pos[bid[i]]
		sorted[next[p]] = r
		next[p]++
	}
	for p := range keys {
		g := sorted[start[p]:start[p+1]]
		if len(g) < 2 {
			continue
		}
		slices.SortFunc(g, func(a, b *record) int {
			if a.nf != b.nf {
				return cmp.Compare(a.nf, b.nf)
			}
			for j := uint8(0); j < a.nf; j++ {
				if a.f[j] != b.f[j] {
					return cmp.Compare(a.f[j], b.f[j])
				}
			}
			if a.cond != b.cond {
				return cmp.Compare(rank[a.cond], rank[b.cond])
			}
			if a.in != b.in {
				return cmp.Compare(srcRank[a.in], srcRank[b.in])
			}
			return cmp.Compare(a.line, b.line)
		})
	}
	copy(recs, sorted)
}

// sortByString orders ids by the strings they name.
func sortByString(ids []int32, strs []string) {
	slices.SortFunc(ids, func(a, b int32) int { return cmp.Compare(strs[a], strs[b]) })
}
