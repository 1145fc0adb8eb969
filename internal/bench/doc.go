// Package bench holds the kit's benchmarks: the default suite's wall time on the reference provider, the cost
// of one callback round trip against the same method called in a plain Python loop, exploration throughput with
// one and two worker sets, and the kit's peak memory while exploring. `make bench` runs them and prints the
// four figures; docs/performance.md records them.
package bench
