package admin

// AlterClientQuotas (key 49), versions 0-1.
//
//   - v0 (KIP-546): ALTER_CONFIGS on the cluster, else every entry
//     CLUSTER_AUTHORIZATION_FAILED. Sets and removes the quotas of user, client-id and
//     user+client-id entities, each by name or as <default> (a null name),
//     in the control plane, where every node watches them. Keys are
//     Kafka's producer_byte_rate, consumer_byte_rate, request_percentage
//     and Shale's shale.remote_fetch_byte_rate; a value must be positive
//     (byte rates whole). An entity that is empty, names a type twice or
//     an unknown type (including ip: connection quotas are not built), an
//     unknown key, a bad value, or a key both set and removed answers
//     INVALID_REQUEST for that entry, which then changes nothing.
//     validate_only checks without changing anything.
//   - v1: flexible versions.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/quota"
)

func (h *Handlers) registerClientQuotas(reg *kafka.Registry, q *controlplane.ClientQuotas) {
	if q == nil {
		return
	}
	h.quotas = q
	reg.Register(kmsg.DescribeClientQuotas, 0, 1, h.handleDescribeClientQuotas)
	reg.Register(kmsg.AlterClientQuotas, 0, 1, h.handleAlterClientQuotas)
}

// quotaEntity reads an entity of a request: each type at most once, user
// and client-id only.
func quotaEntity(types []string, names []*string) (quota.Entity, error) {
	var e quota.Entity
	for i, typ := range types {
		n := quota.DefaultName()
		if names[i] != nil {
			n = quota.Named(*names[i])
		}
		var c *quota.Name
		switch typ {
		case quota.EntityUser:
			c = &e.User
		case quota.EntityClientID:
			c = &e.ClientID
		default:
			return e, fmt.Errorf("%w: unsupported entity type %q", quota.ErrInvalid, typ)
		}
		if c.Set {
			return e, fmt.Errorf("%w: entity type %q given twice", quota.ErrInvalid, typ)
		}
		*c = n
	}
	return e, e.Validate()
}

// entityParts is e as (type, name) pairs, user first, a nil name for the
// default.
func entityParts(e quota.Entity) (types []string, names []*string) {
	add := func(typ string, n quota.Name) {
		if !n.Set {
			return
		}
		types = append(types, typ)
		if n.Default {
			names = append(names, nil)
		} else {
			name := n.Name
			names = append(names, &name)
		}
	}
	add(quota.EntityUser, e.User)
	add(quota.EntityClientID, e.ClientID)
	return types, names
}

func (h *Handlers) handleAlterClientQuotas(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := h.authz.Authorize(req, acl.OpAlterConfigs, acl.Cluster)
	for _, entry := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		types := make([]string, len(entry.Entity))
		names := make([]*string, len(entry.Entity))
		for i, c := range entry.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = c.Type, c.Name
			re.Entity = append(re.Entity, ee)
			types[i], names[i] = c.Type, c.Name
		}
		if !allowed {
			re.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			resp.Entries = append(resp.Entries, re)
			continue
		}
		if err := h.alterClientQuota(ctx, types, names, entry.Ops, r.ValidateOnly); err != nil {
			code := kerr.UnknownServerError.Code
			if errors.Is(err, quota.ErrInvalid) {
				code = kerr.InvalidRequest.Code
			}
			msg := err.Error()
			re.ErrorCode, re.ErrorMessage = code, &msg
		}
		resp.Entries = append(resp.Entries, re)
	}
	return kafka.Reply{Response: resp}, nil
}

func (h *Handlers) alterClientQuota(ctx context.Context, types []string, names []*string, ops []kmsg.AlterClientQuotasRequestEntryOp, validateOnly bool) error {
	e, err := quotaEntity(types, names)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return fmt.Errorf("%w: key %q given twice", quota.ErrInvalid, op.Key)
		}
		seen[op.Key] = true
		if _, ok := quota.TypeForKey(op.Key); !ok {
			return fmt.Errorf("%w: unknown quota key %q", quota.ErrInvalid, op.Key)
		}
		if !op.Remove {
			if err := quota.ValidateValue(op.Key, op.Value); err != nil {
				return err
			}
		}
	}
	if validateOnly {
		return nil
	}
	return h.quotas.Alter(ctx, e, func(cur quota.Values) quota.Values {
		for _, op := range ops {
			if op.Remove {
				delete(cur, op.Key)
			} else {
				cur[op.Key] = op.Value
			}
		}
		return cur
	})
}
