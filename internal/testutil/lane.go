// Package testutil holds test support shared by the kit's packages: the test lanes, the bare pipe echo the
// round-trip benchmarks measure against (PipeEcho), and the interpreter behind `python3` (RealPython, and
// PreferRealPython for a package's TestMain), so that tests do not pay pyenv's shim on every start. It is test
// support only: it imports testing, and no package
// of the kit imports it outside its tests.
//
// The kit's tests run in three lanes (docs/architecture.md, "Test lanes"):
//
//   - the fast lane, `go test -short ./...`: pure tests; every test that starts Python, a harness or the
//     binary skips under testing.Short();
//   - `make test`: everything but the long lane, among it a representative live sample of each long test;
//   - the long lane, `make long`: the tests (or subtests) that call LongLane: every fixture run live, every
//     correct provider explored, repeated runs. It runs them with LongEnv set to 1.
//
// The Makefile's `long` target names the test functions that call LongLane, and TestLongTargetRunsEveryLongTest
// fails when the two drift apart.
package testutil

import (
	"os"
	"testing"
)

// LongEnv is the environment variable that turns the long lane on; `make long` sets it to 1.
const LongEnv = "ASTRABOX_LONG"

// LongTarget is the Makefile target that runs the long lane.
const LongTarget = "make long"

// Long reports whether the long lane is on (LongEnv is 1).
func Long() bool { return os.Getenv(LongEnv) == "1" }

// LongLane skips t unless the long lane is on, with a message naming the target that runs it and why the
// test is long. A test calls it where its long part starts: at its top, or in the subtests beyond the
// representative sample `make test` keeps. Under -short the test has skipped already (it starts Python).
func LongLane(t testing.TB, why string) {
	t.Helper()
	if !Long() {
		t.Skipf("long lane (%s): `%s` runs it (%s=1)", why, LongTarget, LongEnv)
	}
}
