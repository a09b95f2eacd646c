package objstoretest

import (
	"testing"

	"github.com/shale-io/shale/infra/objstore/faultproxy"
)

// The fault proxy's names, for the tests that start it here.
type (
	FaultProxy = faultproxy.FaultProxy
	Fault      = faultproxy.Fault
	Catch      = faultproxy.Catch
)

const (
	Pass          = faultproxy.Pass
	InternalError = faultproxy.InternalError
	SlowDown      = faultproxy.SlowDown
	Stall         = faultproxy.Stall
	SlowLimit     = faultproxy.SlowLimit
	CatchBefore   = faultproxy.CatchBefore
	CatchAfter    = faultproxy.CatchAfter
	CatchLate     = faultproxy.CatchLate
)

// StartFaultProxy starts a fault proxy to target (an http:// URL), closed
// when the test ends.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	p, err := faultproxy.NewFaultProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
