//go:build shale_invariants

package invariants

import "fmt"

// Enabled reports whether the checks run (the shale_invariants build tag).
const Enabled = true

// Check panics with the formatted message when ok is false.
func Check(ok bool, format string, args ...any) {
	if !ok {
		panic("invariant broken: " + fmt.Sprintf(format, args...))
	}
}
