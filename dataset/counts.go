package dataset

import "fmt"

// ConflictTolerance is the relative difference of medians above which
// samples of one shape may conflict (see conflicting).
const ConflictTolerance = 0.10

// Counts says, in words, what was excluded, dropped and repeated.
func (m *Manifest) Counts() string {
	rows, ops := 0, 0
	for _, in := range m.Inputs {
		for _, g := range in.Excluded {
			if g.Op == "" {
				rows += len(g.Lines)
			} else {
				ops += len(g.Lines)
			}
		}
	}
	return fmt.Sprintf("excluded %s and %s; dropped %s and %s; %s measured more than once (kept, %d with times more than %g%% apart)",
		Plural(rows, "whole row"), Plural(ops, "operator cell"),
		Plural(m.DuplicateRows, "exact duplicate row"), Plural(len(m.IdenticalFiles), "identical file"),
		Plural(m.DuplicatedShapes, "shape"), len(m.Conflicts), ConflictTolerance*100)
}

// Plural writes n and the noun, with an s unless n is 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
