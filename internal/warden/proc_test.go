package warden

import (
	"reflect"
	"sort"
	"testing"
)

// TestDescendants: the tree below a root by parent links, each process once, whatever the listing's order;
// processes of other trees and the root's own parent are left out, and a cycle (a pid reused as its own
// ancestor's parent in a racy listing) does not loop.
func TestDescendants(t *testing.T) {
	list := []entry{
		{pid: 30, ppid: 20}, {pid: 10, ppid: 1}, {pid: 20, ppid: 10}, {pid: 21, ppid: 10},
		{pid: 40, ppid: 1}, {pid: 41, ppid: 40}, {pid: 10, ppid: 30},
	}
	got := descendants(10, list)
	sort.Ints(got)
	if want := []int{20, 21, 30}; !reflect.DeepEqual(got, want) {
		t.Fatalf("below 10: %v, want %v", got, want)
	}
	if got := descendants(99, list); len(got) != 0 {
		t.Fatalf("below a pid with no children: %v", got)
	}
}

// TestUnion: the stragglers of macOS (parent links and session members) are killed once each.
func TestUnion(t *testing.T) {
	if got := union([]int{3, 1, 3}, []int{1, 7}); !reflect.DeepEqual(got, []int{3, 1, 7}) {
		t.Fatalf("union: %v", got)
	}
}
