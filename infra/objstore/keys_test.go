package objstore

import (
	"errors"
	"testing"
)

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "a/b", "a.b/c..d", "00000000000000000000-0-1.log", ".hidden"} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q): %v", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", "..", "a/../b", "./a", "a\x00b"} {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q): %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestCheckRange(t *testing.T) {
	for _, c := range []struct{ size, off, n, want int64 }{
		{10, 0, -1, 10}, {10, 3, 4, 4}, {10, 8, 5, 2}, {10, 10, -1, 0}, {10, 10, 3, 0}, {0, 0, -1, 0}, {10, 0, 0, 0},
	} {
		if got, err := CheckRange(c.size, c.off, c.n); err != nil || got != c.want {
			t.Errorf("CheckRange(%d, %d, %d) = %d, %v; want %d", c.size, c.off, c.n, got, err, c.want)
		}
	}
	for _, c := range []struct{ size, off, n int64 }{{10, 11, 1}, {10, -1, 1}, {10, 0, -2}, {0, 1, -1}} {
		if _, err := CheckRange(c.size, c.off, c.n); !errors.Is(err, ErrInvalidRange) {
			t.Errorf("CheckRange(%d, %d, %d): %v", c.size, c.off, c.n, err)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	if !IsRetryable(ErrTransient) || IsRetryable(nil) || IsRetryable(ErrNotFound) || IsRetryable(errors.Join(ErrTransient, ErrNotFound)) {
		t.Error("IsRetryable misclassifies")
	}
}
