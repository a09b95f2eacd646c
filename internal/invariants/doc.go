// Package invariants checks Shale's invariants (DESIGN.md, "Invariants") at
// the points that could break them, in builds with the shale_invariants tag:
// `make test` builds with it, so every test runs with the checks; `make
// build` and `make run` do not, and there Enabled is a false constant, so the
// guarded checks compile away.
//
// A check that fails panics with a message naming the invariant: a broken
// invariant is a bug to find at once, never a state to carry on from.
//
//	if invariants.Enabled {
//		invariants.Check(hw <= leo, "high watermark %d past the log end %d", hw, leo)
//	}
package invariants
