package coverage

import "sort"

// unreachedRanges groups the executable lines of lines (sorted) that are not in reached into runs: two
// unreached lines belong to one run unless a reached executable line lies between them.
func unreachedRanges(lines []int, reached map[int]bool) []Range {
	var out []Range
	open := false
	for _, l := range lines {
		if reached[l] {
			open = false
			continue
		}
		if open {
			out[len(out)-1].Last = l
			continue
		}
		out = append(out, Range{First: l, Last: l})
		open = true
	}
	return out
}

// setOf returns the members of xs as a set.
func setOf(xs []int) map[int]bool {
	m := make(map[int]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// sortedKeys returns the keys of a set in order.
func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k, ok := range m {
		if ok {
			out = append(out, k)
		}
	}
	sort.Ints(out)
	return out
}
