package authz

import (
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// Config configures an Authorizer, with Kafka's settings.
type Config struct {
	// SuperUsers are Kafka's super.users: principals (User:admin) allowed
	// everything, whatever the bindings say.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: an
	// action on a resource that no binding applies to is allowed.
	AllowEveryoneIfNoACLFound bool
	// Logger receives the audit log of denied requests, at most five lines
	// a second. Nil discards them.
	Logger *slog.Logger
	// OnDenied, if set, is called for each audited denial (a metric). It
	// must be cheap and safe for concurrent use.
	OnDenied func(api string, op acl.Operation, rt acl.ResourceType)
}

// ParseSuperUsers splits Kafka's super.users, principals separated by ';'.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Authorizer answers whether a request's principal may act on a resource,
// from the cluster's bindings (replaced as a whole by SetBindings when the
// control plane changes) and its Config. It is Kafka's StandardAuthorizer.
//
// A nil *Authorizer is the authorizer off: every method allows everything,
// so API handlers call it unconditionally. Safe for concurrent use.
type Authorizer struct {
	super       map[string]bool
	allowIfNone bool
	log         *slog.Logger
	onDenied    func(api string, op acl.Operation, rt acl.ResourceType)
	limiter     kafka.LogLimiter

	set atomic.Pointer[acl.Set] // nil until the first SetBindings: no bindings
}

// New returns an authorizer with no bindings.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNone: cfg.AllowEveryoneIfNoACLFound, log: cfg.Logger, onDenied: cfg.OnDenied}
	for _, p := range cfg.SuperUsers {
		a.super[p] = true
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// SetBindings replaces the bindings the authorizer decides with.
func (a *Authorizer) SetBindings(s *acl.Set) { a.set.Store(s) }

// Bindings returns the bindings in force (nil for none).
func (a *Authorizer) Bindings() *acl.Set { return a.set.Load() }

// Enabled reports whether a authorizes at all (a is not nil).
func (a *Authorizer) Enabled() bool { return a != nil }

// Decide is the authorizer's decision for principal at host.
func (a *Authorizer) Decide(principal, host string, op acl.Operation, res acl.Resource) acl.Decision {
	if a.super[principal] {
		return acl.AllowedSuperUser
	}
	return a.set.Load().Decide(principal, host, op, res, a.allowIfNone)
}

// Authorize reports whether req's principal may do op on res; a denial is
// written to the audit log and counted. Use it for a check whose denial
// the client is told of (an error code).
func (a *Authorizer) Authorize(req *kafka.Request, op acl.Operation, res acl.Resource) bool {
	if a == nil {
		return true
	}
	principal, host := Principal(req.Conn), Host(req.Conn)
	d := a.Decide(principal, host, op, res)
	if !d.Allowed() {
		a.audit(req, principal, host, op, res, d)
	}
	return d.Allowed()
}

// Permits is Authorize without the audit log: for the quiet checks, where
// what is not permitted is left out of an answer (Metadata's topic list,
// ListGroups) rather than refused, as Kafka logs them only at debug.
func (a *Authorizer) Permits(req *kafka.Request, op acl.Operation, res acl.Resource) bool {
	if a == nil {
		return true
	}
	return a.Decide(Principal(req.Conn), Host(req.Conn), op, res).Allowed()
}

// AuthorizeAny reports whether req's principal may do op on at least one
// resource of type rt (Kafka's authorizeByResourceType: InitProducerId of
// an idempotent producer may have IdempotentWrite on the cluster or Write
// on any topic). A denial is not audited: the caller audits the check it
// reports.
func (a *Authorizer) AuthorizeAny(req *kafka.Request, op acl.Operation, rt acl.ResourceType) bool {
	if a == nil {
		return true
	}
	principal := Principal(req.Conn)
	if a.super[principal] {
		return true
	}
	return a.set.Load().DecideAny(principal, Host(req.Conn), op, rt, a.allowIfNone).Allowed()
}

func (a *Authorizer) audit(req *kafka.Request, principal, host string, op acl.Operation, res acl.Resource, d acl.Decision) {
	api := kmsg.NameForKey(req.Key)
	if a.onDenied != nil {
		a.onDenied(api, op, res.Type)
	}
	ok, suppressed := a.limiter.Allow(time.Now())
	if !ok {
		return
	}
	attrs := []any{"principal", principal, "host", host, "api", api, "operation", op.String(),
		"resource_type", res.Type.String(), "resource", res.Name, "reason", d.String(), "client_id", req.ClientID}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	a.log.Info("authorization denied", attrs...)
}

// Principal is the connection's principal, User:ANONYMOUS when it proved
// none.
func Principal(c *kafka.ConnInfo) string {
	if c == nil || c.Principal == "" {
		return kafka.AnonymousPrincipal
	}
	return c.Principal
}

// Host is the client's IP address as ACL hosts name it ("127.0.0.1").
func Host(c *kafka.ConnInfo) string {
	if c == nil || c.Remote == nil {
		return ""
	}
	if t, ok := c.Remote.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	h, _, err := net.SplitHostPort(c.Remote.String())
	if err != nil {
		return c.Remote.String()
	}
	return h
}
