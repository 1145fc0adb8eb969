package conformance

import (
	"runtime"
	"testing"
)

// TestSuiteJobs: without --jobs the suite runs two scenarios per core at once for a provider without declared
// services and one per core for one with them, never more than it has scenarios; --jobs decides when given,
// and exploration's count stays a slot per core.
func TestSuiteJobs(t *testing.T) {
	cores := runtime.NumCPU()
	cases := []struct {
		name              string
		jobs, n, services int
		suite, ex         int
	}{
		{"default, many scenarios", 0, 1000, 0, 2 * cores, cores},
		{"default, many scenarios, declared services", 0, 1000, 2, cores, cores},
		{"default, one scenario", 0, 1, 0, 1, 1},
		{"default, as many scenarios as cores", 0, cores, 0, cores, cores},
		{"default, one more scenario than cores", 0, cores + 1, 0, cores + 1, cores},
		{"--jobs 1", 1, 4, 0, 1, 1},
		{"--jobs 2, declared services", 2, 4, 1, 2, 2},
		{"--jobs 3", 3, 4, 0, 3, 3},
		{"--jobs above the scenarios", 9, 4, 0, 4, 4},
	}
	for _, c := range cases {
		o := Options{Jobs: c.jobs}
		if got := o.suiteJobs(c.n, c.services); got != c.suite {
			t.Errorf("%s: suiteJobs(%d, %d) = %d, want %d", c.name, c.n, c.services, got, c.suite)
		}
		if got := o.jobs(c.n); got != c.ex {
			t.Errorf("%s: jobs(%d) = %d, want %d", c.name, c.n, got, c.ex)
		}
	}
}
