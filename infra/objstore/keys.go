package objstore

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidKey: a key that is empty, absolute, or holds an empty, "." or
// ".." segment. Providers wrap it with %w.
var ErrInvalidKey = errors.New("objstore: invalid key")

// ValidateKey reports whether key is a well-formed object key: non-empty,
// slash-separated, without a leading slash, without empty, "." or ".."
// segments and without NUL bytes. The error wraps ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if strings.ContainsRune(key, 0) {
		return fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidKey, key)
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("%w: %q is absolute", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty segment", ErrInvalidKey, key)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// CheckRange validates a ranged read of an object of the given size and
// returns the number of bytes the read yields. The contract shared by all
// providers: offset must lie in [0, size] and length must be -1 (to the end)
// or non-negative; a range that runs past the end is a short read, not an
// error; offset == size yields an empty read. Anything else wraps
// ErrInvalidRange.
func CheckRange(size, offset, length int64) (int64, error) {
	if offset < 0 || offset > size || length < -1 {
		return 0, fmt.Errorf("%w: offset %d length %d of %d bytes", ErrInvalidRange, offset, length, size)
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	return n, nil
}
