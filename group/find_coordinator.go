package group

// FindCoordinator (key 10), versions 0-6.
//
//   - v1: CoordinatorType (0 group, 1 transaction), ErrorMessage.
//   - v3: flexible versions.  v4: a batch of keys (KIP-699), answered
//     per key.
//   - v5: as v4 (Kafka may answer TRANSACTION_ABORTABLE, KIP-890; Shale's
//     lookup never does).
//   - v6: key type 2 (KIP-932), a share coordinator key
//     "group:topicId:partition": the leader of the key's
//     __share_group_state partition (SetShareCoordinators; created on
//     first use), as share-partition leaders ask it. Below v6 the type is
//     INVALID_REQUEST, as is a malformed key; with an authorizer it needs
//     ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED), as
//     Kafka's inter-broker use does. COORDINATOR_NOT_AVAILABLE when share
//     groups are not served.
//
// The coordinator of a group is the leader of __consumer_offsets
// partition PartitionFor(group). The topic is created on first use
// (EnsureOffsetsTopic: compacted, internal, offsets.topic.num.partitions
// partitions), with offsets.topic.replication.factor replicas (default
// 3), or as many as there are live brokers if fewer. Key type 1
// asks for a transaction coordinator, which the node's transaction
// coordinator answers (the leader of the id's __transaction_state
// partition, package txn; SetTransactions); COORDINATOR_NOT_AVAILABLE
// without one.
//
// With an authorizer a group key needs Describe on the group
// (GROUP_AUTHORIZATION_FAILED), a transactional id Describe on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleFindCoordinator(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.FindCoordinatorRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		keys := r.CoordinatorKeys
		if req.Version < 4 {
			keys = []string{r.CoordinatorKey}
		}
		for _, key := range keys {
			if code := c.coordinatorDenied(req, key, r.CoordinatorType); code != 0 {
				rc := kmsg.NewFindCoordinatorResponseCoordinator()
				rc.Key, rc.NodeID, rc.Host, rc.Port, rc.ErrorCode = key, -1, "", -1, code
				if req.Version >= 4 {
					resp.Coordinators = append(resp.Coordinators, rc)
				} else {
					resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, -1, "", -1
				}
				continue
			}
			b, err := c.findCoordinator(ctx, key, r.CoordinatorType)
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.NodeID, rc.Host, rc.Port = key, b.NodeID, b.Host, b.Port
			if err == nil {
				var ok bool
				if rc.Host, rc.Port, ok = kafka.AdvertisedAddr(b.Listeners, req.ListenerName(), b.Host, b.Port); !ok {
					err = fmt.Errorf("%w: the coordinator has no listener %s", ErrCoordinatorNotAvailable, req.ListenerName())
				}
			}
			if err != nil {
				rc.NodeID, rc.Host, rc.Port = -1, "", -1
				rc.ErrorCode = errorCode(err)
				if rc.ErrorCode == kerr.UnknownServerError.Code || rc.ErrorCode == kerr.NotCoordinator.Code {
					rc.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
				msg := err.Error()
				rc.ErrorMessage = &msg
			}
			if req.Version >= 4 {
				resp.Coordinators = append(resp.Coordinators, rc)
				continue
			}
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port =
				rc.ErrorCode, rc.ErrorMessage, rc.NodeID, rc.Host, rc.Port
		}
		return resp, nil
	}}, nil
}

// coordinatorDenied is the error of a key its principal may not Describe,
// or 0.
func (c *Coordinator) coordinatorDenied(req *kafka.Request, key string, keyType int8) int16 {
	if keyType == 2 {
		switch {
		case req.Version < 6:
			return kerr.InvalidRequest.Code
		case !c.allowed(req, acl.OpClusterAction, acl.Cluster):
			return kerr.ClusterAuthorizationFailed.Code
		}
		return 0
	}
	if keyType == 1 {
		if !c.allowed(req, acl.OpDescribe, acl.TransactionalID(key)) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	}
	if !c.allowed(req, acl.OpDescribe, acl.Group(key)) {
		return kerr.GroupAuthorizationFailed.Code
	}
	return 0
}

// findCoordinator is the broker leading key's offsets partition, creating
// the offsets topic on first use.
func (c *Coordinator) findCoordinator(ctx context.Context, key string, keyType int8) (coordinator.Broker, error) {
	if keyType == 1 {
		c.mu.Lock()
		txns := c.mu.txns
		c.mu.Unlock()
		if txns == nil {
			return coordinator.Broker{}, fmt.Errorf("%w: transactions are not served", ErrCoordinatorNotAvailable)
		}
		b, err := txns.FindCoordinator(ctx, key)
		if err != nil {
			return coordinator.Broker{}, fmt.Errorf("%w: %w", ErrCoordinatorNotAvailable, err)
		}
		return b, nil
	}
	if keyType == 2 {
		c.mu.Lock()
		shares := c.mu.shareCoords
		c.mu.Unlock()
		if shares == nil {
			return coordinator.Broker{}, fmt.Errorf("%w: share groups are not served", ErrCoordinatorNotAvailable)
		}
		return shares.FindShareCoordinator(ctx, key)
	}
	if keyType != 0 {
		return coordinator.Broker{}, fmt.Errorf("%w: coordinator type %d is not supported", ErrCoordinatorNotAvailable, keyType)
	}
	if key == "" {
		return coordinator.Broker{}, fmt.Errorf("%w: empty group id", ErrCoordinatorNotAvailable)
	}
	p := PartitionFor(key, c.cfg.Partitions)
	b, ok := c.cluster.PartitionLeader(OffsetsTopic, p)
	if ok {
		return b, nil
	}
	if _, err := c.EnsureOffsetsTopic(ctx); err != nil {
		return coordinator.Broker{}, fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, OffsetsTopic, err)
	}
	if b, ok = c.cluster.PartitionLeader(OffsetsTopic, p); !ok {
		return coordinator.Broker{}, fmt.Errorf("%w: %s-%d has no leader", ErrCoordinatorNotAvailable, OffsetsTopic, p)
	}
	return b, nil
}

// TxnCoordinators finds transaction coordinators (package txn).
type TxnCoordinators interface {
	// FindCoordinator is the broker coordinating transactional id.
	FindCoordinator(ctx context.Context, transactionalID string) (coordinator.Broker, error)
}

// SetTransactions has FindCoordinator answer key type 1 (transactions)
// with t. Safe to call while serving.
func (c *Coordinator) SetTransactions(t TxnCoordinators) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.txns = t
}

// ShareCoordinators finds share coordinators (package share's state
// coordinator): FindCoordinator v6 key type 2.
type ShareCoordinators interface {
	// FindShareCoordinator is the broker leading key's __share_group_state
	// partition. A malformed key is an error wrapping kerr.InvalidRequest;
	// one it cannot find now wraps ErrCoordinatorNotAvailable.
	FindShareCoordinator(ctx context.Context, key string) (coordinator.Broker, error)
}

// SetShareCoordinators has FindCoordinator v6 answer key type 2 (share)
// with s. Safe to call while serving.
func (c *Coordinator) SetShareCoordinators(s ShareCoordinators) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.shareCoords = s
}
