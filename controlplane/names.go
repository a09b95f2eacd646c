package controlplane

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxTopicNameLen is Kafka's longest topic name.
const MaxTopicNameLen = 249

// ValidateTopicName applies Kafka's rules: 1 to 249 characters from
// [a-zA-Z0-9._-], and neither "." nor "..". The error wraps
// ErrInvalidTopicName.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopicName)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopicName, name)
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("%w: %d characters, the limit is %d", ErrInvalidTopicName, len(name), MaxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; allowed are ASCII letters, digits, '.', '_' and '-'", ErrInvalidTopicName, name, c)
		}
	}
	return nil
}

// isInternalTopic reports the topics Kafka marks internal.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// A NATS KV key is dot-separated tokens, none empty; Kafka names may start or
// end with '.' or hold "..". '=' never occurs in a topic name, so '.' is
// written as "=2E" and the mapping is reversible.
func topicKey(name string) string    { return strings.ReplaceAll(name, ".", "=2E") }
func topicFromKey(key string) string { return strings.ReplaceAll(key, "=2E", ".") }
func brokerKey(id int32) string      { return strconv.FormatInt(int64(id), 10) }
func partitionKey(id TopicID, p int32) string {
	return id.Hex() + "." + strconv.FormatInt(int64(p), 10)
}

func parsePartitionKey(key string) (TopicID, int32, error) {
	h, p, ok := strings.Cut(key, ".")
	if !ok {
		return TopicID{}, 0, fmt.Errorf("controlplane: partition key %q", key)
	}
	id, err := ParseTopicID(h)
	if err != nil {
		return TopicID{}, 0, err
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return TopicID{}, 0, fmt.Errorf("controlplane: partition key %q: %w", key, err)
	}
	return id, int32(n), nil
}

func parseBrokerKey(key string) (int32, error) {
	n, err := strconv.ParseInt(key, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("controlplane: broker key %q: %w", key, err)
	}
	return int32(n), nil
}
