package quota

import (
	"fmt"
	"strings"
)

// Kafka's entity types of client quotas.
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
)

// Name is one component of an entity: absent, the default of its type
// (Kafka's <default>, a null name on the wire), or a name. The zero Name is
// absent.
type Name struct {
	Set     bool
	Default bool
	Name    string
}

// Named returns the component of that name.
func Named(name string) Name { return Name{Set: true, Name: name} }

// DefaultName is the <default> component.
func DefaultName() Name { return Name{Set: true, Default: true} }

func (n Name) String() string {
	switch {
	case !n.Set:
		return ""
	case n.Default:
		return "<default>"
	}
	return n.Name
}

// Entity is what a quota is configured for: a user, a client id, or a user
// and client id, each by name or as the default, as Kafka's
// /config/users/<user>/clients/<client-id>. Comparable: usable as a map key.
type Entity struct {
	User     Name
	ClientID Name
}

// Validate reports an entity with no component.
func (e Entity) Validate() error {
	if !e.User.Set && !e.ClientID.Set {
		return fmt.Errorf("%w: an entity needs a user or a client id", ErrInvalid)
	}
	return nil
}

// String is Kafka's path form: "users/alice/clients/<default>".
func (e Entity) String() string {
	var parts []string
	if e.User.Set {
		parts = append(parts, "users/"+e.User.String())
	}
	if e.ClientID.Set {
		parts = append(parts, "clients/"+e.ClientID.String())
	}
	return strings.Join(parts, "/")
}

// precedence is Kafka's order (DefaultQuotaCallback, KIP-55) in which the
// entities that may apply to a user and client id are tried: the first
// with a quota of the type wins.
func precedence(user, clientID string) [8]Entity {
	u, c, du, dc := Named(user), Named(clientID), DefaultName(), DefaultName()
	return [8]Entity{
		{User: u, ClientID: c},
		{User: u, ClientID: dc},
		{User: u},
		{User: du, ClientID: c},
		{User: du, ClientID: dc},
		{User: du},
		{ClientID: c},
		{ClientID: dc},
	}
}

// sensorKey names the rate a quota is measured on, Kafka's metric tags:
// the user and client id the matched entity names or defaults, so that a
// quota on /users/alice is shared by every client of alice while one on
// /users/<default> holds each user apart.
type sensorKey struct {
	typ      Type
	user     string
	clientID string
}

func sensorFor(t Type, matched Entity, user, clientID string) sensorKey {
	return resolvedOf(0, matched, true).sensor(t, user, clientID)
}

// UserOf returns the user name of a principal ("User:alice" is "alice"), as
// Kafka's user quotas name a principal by its name.
func UserOf(principal string) string {
	if name, ok := strings.CutPrefix(principal, "User:"); ok {
		return name
	}
	return principal
}
