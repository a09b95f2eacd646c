package sdk

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

// SCRAM mechanism names for the user calls.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// UserCredential is one SCRAM credential a user has: its mechanism and
// iteration count (the broker never returns the keys).
type UserCredential struct {
	User       string `json:"user"`
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func scramMechanism(name string) (kadm.ScramMechanism, error) {
	switch name {
	case ScramSHA256:
		return kadm.ScramSha256, nil
	case ScramSHA512:
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("sdk: mechanism %q: want %s or %s", name, ScramSHA256, ScramSHA512)
}

// UpsertUser creates user's SCRAM credential for mechanism, or replaces it,
// with Kafka's AlterUserScramCredentials: the password is salted here and
// only the salted password is sent. iterations 0 is 4096.
func (a *Admin) UpsertUser(ctx context.Context, user, password, mechanism string, iterations int32) error {
	m, err := scramMechanism(mechanism)
	if err != nil {
		return err
	}
	if iterations == 0 {
		iterations = 4096
	}
	res, err := a.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: iterations, Password: password}})
	if err != nil {
		return err
	}
	return alteredErr(res)
}

// DeleteUser removes user's credential for mechanism.
func (a *Admin) DeleteUser(ctx context.Context, user, mechanism string) error {
	m, err := scramMechanism(mechanism)
	if err != nil {
		return err
	}
	res, err := a.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: m}}, nil)
	if err != nil {
		return err
	}
	return alteredErr(res)
}

func alteredErr(res kadm.AlteredUserSCRAMs) error {
	for _, r := range res {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("user %s: %w: %s", r.User, r.Err, r.ErrMessage)
			}
			return fmt.Errorf("user %s: %w", r.User, r.Err)
		}
	}
	return nil
}

// ListUsers returns every SCRAM credential of the cluster, ordered by user
// and mechanism.
func (a *Admin) ListUsers(ctx context.Context) ([]UserCredential, error) {
	described, err := a.adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return nil, err
	}
	var out []UserCredential
	for _, d := range described {
		if d.Err != nil {
			return nil, fmt.Errorf("user %s: %w", d.User, d.Err)
		}
		for _, ci := range d.CredInfos {
			out = append(out, UserCredential{User: d.User, Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].Mechanism < out[j].Mechanism
	})
	return out, nil
}
