package sdk

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Client quota keys (Kafka's, and Shale's cold-read quota).
const (
	QuotaProducerByteRate    = "producer_byte_rate"
	QuotaConsumerByteRate    = "consumer_byte_rate"
	QuotaRequestPercentage   = "request_percentage"
	QuotaRemoteFetchByteRate = "shale.remote_fetch_byte_rate"
)

// QuotaEntity is what a client quota applies to: a user, a client id, or
// both, each by name or as the default of its type (Kafka's <default>).
// A component is absent when its name is nil and its Default is false.
type QuotaEntity struct {
	User            *string `json:"user,omitempty"`
	DefaultUser     bool    `json:"default_user,omitempty"`
	ClientID        *string `json:"client_id,omitempty"`
	DefaultClientID bool    `json:"default_client_id,omitempty"`
}

// String is Kafka's form: "user=alice,client-id=<default>".
func (e QuotaEntity) String() string {
	var parts []string
	for _, c := range e.components() {
		parts = append(parts, kadm.ClientQuotaEntityComponent{Type: c.Type, Name: c.Name}.String())
	}
	return strings.Join(parts, ",")
}

func (e QuotaEntity) components() []kadm.ClientQuotaEntityComponent {
	var out []kadm.ClientQuotaEntityComponent
	if e.User != nil || e.DefaultUser {
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "user", Name: e.User})
	}
	if e.ClientID != nil || e.DefaultClientID {
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: e.ClientID})
	}
	return out
}

func (e QuotaEntity) check() error {
	switch {
	case e.User != nil && e.DefaultUser, e.ClientID != nil && e.DefaultClientID:
		return errors.New("sdk: a quota entity component is either named or the default")
	case len(e.components()) == 0:
		return errors.New("sdk: a quota entity needs a user or a client id")
	}
	return nil
}

// ClientQuota is one entity's quotas, by key.
type ClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// SetQuotas sets the given quotas of e (AlterClientQuotas), leaving its
// other keys as they are. With validateOnly the broker checks the change
// and makes none.
func (a *Admin) SetQuotas(ctx context.Context, e QuotaEntity, values map[string]float64, validateOnly bool) error {
	var ops []kadm.AlterClientQuotaOp
	for k, v := range values {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
	}
	return a.alterQuotas(ctx, e, ops, validateOnly)
}

// DeleteQuotas removes the given keys of e's quotas; no keys removes every
// quota e has.
func (a *Admin) DeleteQuotas(ctx context.Context, e QuotaEntity, keys []string) error {
	if err := e.check(); err != nil {
		return err
	}
	if len(keys) == 0 {
		all, err := a.ListQuotas(ctx)
		if err != nil {
			return err
		}
		for _, q := range all {
			if q.Entity.String() == e.String() {
				for k := range q.Values {
					keys = append(keys, k)
				}
			}
		}
		if len(keys) == 0 {
			return fmt.Errorf("sdk: %s has no quotas", e)
		}
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range keys {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	return a.alterQuotas(ctx, e, ops, false)
}

func (a *Admin) alterQuotas(ctx context.Context, e QuotaEntity, ops []kadm.AlterClientQuotaOp, validateOnly bool) error {
	if err := e.check(); err != nil {
		return err
	}
	alter := a.adm.AlterClientQuotas
	if validateOnly {
		alter = a.adm.ValidateAlterClientQuotas
	}
	res, err := alter(ctx, []kadm.AlterClientQuotaEntry{{Entity: e.components(), Ops: ops}})
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("quota %s: %w: %s", e, r.Err, r.ErrMessage)
			}
			return fmt.Errorf("quota %s: %w", e, r.Err)
		}
	}
	return nil
}

// ListQuotas returns every entity's quotas (DescribeClientQuotas), ordered
// by the entity's String.
func (a *Admin) ListQuotas(ctx context.Context) ([]ClientQuota, error) {
	described, err := a.adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		return nil, err
	}
	out := []ClientQuota{}
	for _, d := range described {
		q := ClientQuota{Values: map[string]float64{}}
		for _, c := range d.Entity {
			switch c.Type {
			case "user":
				q.Entity.User, q.Entity.DefaultUser = c.Name, c.Name == nil
			case "client-id":
				q.Entity.ClientID, q.Entity.DefaultClientID = c.Name, c.Name == nil
			}
		}
		for _, v := range d.Values {
			q.Values[v.Key] = v.Value
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.String() < out[j].Entity.String() })
	return out, nil
}
