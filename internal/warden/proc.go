package warden

// entry is one live process of a listing: its pid and its parent's.
type entry struct {
	pid, ppid int
}

// descendants returns the descendants of root in a listing (not root itself), each once, by parent links.
func descendants(root int, list []entry) []int {
	children := map[int][]int{}
	for _, e := range list {
		children[e.ppid] = append(children[e.ppid], e.pid)
	}
	var out []int
	seen := map[int]bool{root: true}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[pid] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				stack = append(stack, c)
			}
		}
	}
	return out
}

// union returns the pids of a and b, each once, in the order first seen.
func union(a, b []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, l := range [][]int{a, b} {
		for _, p := range l {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
