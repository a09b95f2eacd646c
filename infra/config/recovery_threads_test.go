package config

import (
	"errors"
	"testing"
)

// TestNumRecoveryThreads: by default a node opens 8
// partitions at once, and fewer than 1 is refused.
func TestNumRecoveryThreads(t *testing.T) {
	b := Defaults()
	if b.NumRecoveryThreadsPerDataDir != 8 {
		t.Fatalf("default %d, want 8", b.NumRecoveryThreadsPerDataDir)
	}
	for _, v := range []int{0, -1} {
		b.NumRecoveryThreadsPerDataDir = v
		if err := b.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("num_recovery_threads_per_data_dir %d: Validate = %v, want ErrInvalidConfig", v, err)
		}
	}
}
