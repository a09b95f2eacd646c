package proctest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/freeport"
)

// ErrDeadline is returned, wrapped, by Poll and WaitFor when the condition
// did not hold before the deadline.
var ErrDeadline = errors.New("proctest: condition not met before the deadline")

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago and that no other FreeAddr in this test binary returned (see
// freeport; another process may still take it before the caller binds it).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Poll calls cond every interval (and once at once) until it returns true,
// or returns ErrDeadline (wrapped) once d has passed. cond runs on the
// caller's goroutine; a call that outlasts the interval is followed by the
// next at once.
func Poll(d, interval time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", d, ErrDeadline)
		}
		<-tick.C
	}
	return nil
}

// WaitFor is Poll every 20 ms.
func WaitFor(d time.Duration, cond func() bool) error { return Poll(d, 20*time.Millisecond, cond) }

// Context returns a context cancelled after d or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Eventually is WaitFor that fails the test, naming what it waited for,
// when cond did not hold within d.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := WaitFor(d, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
