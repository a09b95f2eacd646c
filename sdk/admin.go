package sdk

import (
	"net/http"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Admin manages topics, topic configs and consumer groups over the Kafka
// protocol, and reads the tier status from a node's admin HTTP endpoint
// (WithAdminURL). Its methods are safe for concurrent use.
type Admin struct {
	cl         *kgo.Client
	adm        *kadm.Client
	adminURL   string
	adminToken string
	http       *http.Client
	closed     atomic.Bool
}

// NewAdmin returns an admin client; it connects lazily.
func NewAdmin(opts ...Option) (*Admin, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(c.clientOpts(), c.extra...)...)
	if err != nil {
		return nil, err
	}
	return &Admin{cl: cl, adm: kadm.NewClient(cl), adminURL: c.adminURL, adminToken: c.adminToken, http: c.http}, nil
}

// Kadm is the underlying franz-go admin client. The caller must not close
// it.
func (a *Admin) Kadm() *kadm.Client { return a.adm }

// Close closes the connections. It is idempotent.
func (a *Admin) Close() {
	if !a.closed.Swap(true) {
		a.cl.Close()
	}
}
