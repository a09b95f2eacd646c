//go:build !shale_invariants

package invariants

// Enabled reports whether the checks run (the shale_invariants build tag).
const Enabled = false

// Check does nothing without the shale_invariants build tag.
func Check(bool, string, ...any) {}
