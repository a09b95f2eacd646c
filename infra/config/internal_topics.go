package config

// The internal topics, as Kafka's Topic.isInternal names them: the group,
// transaction and share coordinators' logs.
const (
	OffsetsTopic          = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
	ShareGroupStateTopic  = "__share_group_state"
)

// AdminClientID is the client id Kafka reserves for its own admin tools
// (AdminUtils.ADMIN_CLIENT_ID): the one client allowed to append to an
// internal topic.
const AdminClientID = "__admin_client"

// IsInternalTopic reports whether name is one of Kafka's internal topics.
func IsInternalTopic(name string) bool {
	return name == OffsetsTopic || name == TransactionStateTopic || name == ShareGroupStateTopic
}
