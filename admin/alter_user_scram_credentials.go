package admin

// AlterUserScramCredentials (key 51), version 0.
//
//   - v0 (KIP-554): upserts take the salted password, its salt and
//     iterations (the client salts, the password never reaches the broker)
//     and store the derived StoredKey and ServerKey in the control plane;
//     deletions remove one mechanism's credential. Mechanisms 1
//     (SCRAM-SHA-256) and 2 (SCRAM-SHA-512); iterations 4096-16384, else
//     UNACCEPTABLE_CREDENTIAL; a user named twice is DUPLICATE_RESOURCE, a
//     deletion of a missing credential RESOURCE_NOT_FOUND.
//
// With an authorizer it needs Alter on the cluster, else every user's
// result is CLUSTER_AUTHORIZATION_FAILED and nothing changes.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

// scramMechanisms are Kafka's ScramMechanism codes.
var scramMechanisms = map[int8]string{1: sasl.ScramSHA256, 2: sasl.ScramSHA512}

func scramMechanismCode(name string) int8 {
	for c, n := range scramMechanisms {
		if n == name {
			return c
		}
	}
	return 0
}

func (h *Handlers) registerSCRAM(reg *kafka.Registry, creds *controlplane.SCRAMCredentials) {
	if creds == nil {
		return
	}
	h.scram = creds
	reg.Register(kmsg.AlterUserSCRAMCredentials, 0, 0, h.handleAlterUserSCRAMCredentials)
	reg.Register(kmsg.DescribeUserSCRAMCredentials, 0, 0, h.handleDescribeUserSCRAMCredentials)
}

func (h *Handlers) handleAlterUserSCRAMCredentials(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	// Kafka answers one result per user; a user named twice fails whole.
	count := map[string]int{}
	var order []string
	note := func(user string) {
		if count[user] == 0 {
			order = append(order, user)
		}
		count[user]++
	}
	for _, d := range r.Deletions {
		note(d.Name)
	}
	for _, u := range r.Upsertions {
		note(u.Name)
	}
	failed := map[string]*kerr.Error{}
	msgs := map[string]string{}
	fail := func(user string, e *kerr.Error, msg string) {
		if failed[user] == nil {
			failed[user], msgs[user] = e, msg
		}
	}
	if !h.authz.Authorize(req, acl.OpAlter, acl.Cluster) {
		for user := range count {
			fail(user, kerr.ClusterAuthorizationFailed, "Alter on the cluster is needed")
		}
	}
	for user, n := range count {
		if n > 1 {
			fail(user, kerr.DuplicateResource, "a user may appear once per request")
		}
	}
	// mechanism is the mechanism a deletion or upsertion of user names,
	// false when the user has failed: an empty name or an unknown
	// mechanism fails it here.
	mechanism := func(user string, code int8) (string, bool) {
		mech, ok := scramMechanisms[code]
		switch {
		case user == "":
			fail(user, kerr.UnacceptableCredential, "empty user name")
		case !ok:
			fail(user, kerr.UnsupportedSaslMechanism, "unknown SCRAM mechanism")
		}
		return mech, failed[user] == nil
	}
	for _, d := range r.Deletions {
		mech, ok := mechanism(d.Name, d.Mechanism)
		if !ok {
			continue
		}
		err := h.scram.Delete(ctx, mech, d.Name)
		if errors.Is(err, controlplane.ErrNoSCRAMCredential) {
			fail(d.Name, kerr.ResourceNotFound, "no such credential")
		} else if err != nil {
			fail(d.Name, kerr.UnknownServerError, err.Error())
		}
	}
	for _, u := range r.Upsertions {
		mech, ok := mechanism(u.Name, u.Mechanism)
		if !ok {
			continue
		}
		c, err := sasl.CredentialFromSaltedPassword(mech, u.Salt, u.SaltedPassword, int(u.Iterations))
		if err != nil {
			fail(u.Name, kerr.UnacceptableCredential, err.Error())
			continue
		}
		if err := h.scram.Put(ctx, controlplane.SCRAMCredential{User: u.Name, Mechanism: mech, Salt: c.Salt,
			Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}); err != nil {
			fail(u.Name, kerr.UnknownServerError, err.Error())
		}
	}
	for _, user := range order {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User = user
		if e := failed[user]; e != nil {
			msg := msgs[user]
			rr.ErrorCode, rr.ErrorMessage = e.Code, &msg
		}
		resp.Results = append(resp.Results, rr)
	}
	return kafka.Reply{Response: resp}, nil
}
