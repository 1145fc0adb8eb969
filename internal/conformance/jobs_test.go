package conformance

import (
	"runtime"
	"testing"
)

// TestSuiteJobs: the suite runs one scenario more than the cores at once unless --jobs says otherwise, never
// more than it has scenarios; exploration's count stays a slot per core.
func TestSuiteJobs(t *testing.T) {
	cores := runtime.NumCPU()
	cases := []struct {
		name      string
		jobs, n   int
		suite, ex int
	}{
		{"default, many scenarios", 0, 1000, cores + 1, cores},
		{"default, one scenario", 0, 1, 1, 1},
		{"default, as many scenarios as cores", 0, cores, cores, cores},
		{"--jobs 1", 1, 4, 1, 1},
		{"--jobs 2", 2, 4, 2, 2},
		{"--jobs above the scenarios", 9, 4, 4, 4},
	}
	for _, c := range cases {
		o := Options{Jobs: c.jobs}
		if got := o.suiteJobs(c.n); got != c.suite {
			t.Errorf("%s: suiteJobs(%d) = %d, want %d", c.name, c.n, got, c.suite)
		}
		if got := o.jobs(c.n); got != c.ex {
			t.Errorf("%s: jobs(%d) = %d, want %d", c.name, c.n, got, c.ex)
		}
	}
}
