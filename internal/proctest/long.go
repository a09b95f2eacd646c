package proctest

import "os"

// LongEnv, set to 1, makes the scenario tests that repeat a fault (kill
// and pause loops) or hold one (a control-plane pause) run at their full
// length: `make chaos` sets it. `make test` runs them shorter, enough
// rounds for every partition and role to take each fault at least once, to
// stay within its 15-minute budget; the full length is for finding what
// only repetition finds.
const LongEnv = "SHALE_LONG_TESTS"

// Long reports whether the full-length scenario runs were asked for.
func Long() bool { return os.Getenv(LongEnv) == "1" }

// Rounds is short in a plain run and long when Long is set.
func Rounds[T any](short, long T) T {
	if Long() {
		return long
	}
	return short
}
