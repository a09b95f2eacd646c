package controlplane

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// TopicID is a topic's unique id: the 16 bytes of a random (version 4) UUID,
// as Kafka assigns them. A topic deleted and created again gets a new id.
type TopicID [16]byte

// NewTopicID returns a random version 4 UUID. Like Kafka's Uuid.randomUuid it
// never returns the zero id, the reserved metadata topic id (1), or an id
// whose string form starts with '-'.
func NewTopicID() TopicID {
	for {
		var id TopicID
		if _, err := rand.Read(id[:]); err != nil {
			panic(fmt.Sprintf("controlplane: crypto/rand failed: %v", err))
		}
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		if id.IsZero() || id == metadataTopicID || strings.HasPrefix(id.String(), "-") {
			continue
		}
		return id
	}
}

// metadataTopicID is Kafka's reserved id for the KRaft metadata topic.
var metadataTopicID = TopicID{15: 1}

// IsZero reports whether id is the zero id (Kafka's "no topic id").
func (id TopicID) IsZero() bool { return id == TopicID{} }

// String returns the id as Kafka prints topic ids: URL-safe base64 without
// padding (22 characters).
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Hex returns the id as 32 lowercase hex digits, the form used in object
// keys and KV keys.
func (id TopicID) Hex() string { return hex.EncodeToString(id[:]) }

// ParseTopicID parses either form: Kafka's 22-character base64url or 32 hex
// digits.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	var b []byte
	var err error
	switch len(s) {
	case 22:
		b, err = base64.RawURLEncoding.DecodeString(s)
	case 32:
		b, err = hex.DecodeString(s)
	default:
		return id, fmt.Errorf("controlplane: topic id %q: want 22 base64url chars or 32 hex digits", s)
	}
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("controlplane: topic id %q: %v", s, err)
	}
	copy(id[:], b)
	return id, nil
}
