// Package config holds Shale's configuration: the broker's settings (a struct
// fed by a YAML file, SHALE_* environment variables and flags, in that order of
// precedence from lowest to highest) and the topic-level configs with Kafka's
// names and defaults.
package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// Broker is one node's configuration. Field tags give the YAML key; the flag
// and environment names are derived from it (listen -> --listen, SHALE_LISTEN).
type Broker struct {
	NodeID                      int32  `yaml:"node_id" doc:"This node's broker id, unique in the cluster."`
	DataDir                     string `yaml:"data_dir" doc:"Directory for partition logs, the embedded NATS store and the filesystem bucket."`
	Listen                      string `yaml:"listen" doc:"Address the Kafka protocol listens on."`
	Advertise                   string `yaml:"advertise" doc:"host:port clients are told to connect to; defaults to listen."`
	Listeners                   string `yaml:"listeners" doc:"listeners: comma-separated NAME://host:port Kafka listeners (PLAINTEXT://127.0.0.1:9092,SSL://0.0.0.0:9093); when set, listen and advertise are ignored. Empty serves one PLAINTEXT listener on listen."`
	AdvertisedListeners         string `yaml:"advertised_listeners" doc:"advertised.listeners: NAME://host:port clients of each listener are told to connect to; a listener not named advertises its listen address."`
	ListenerSecurityProtocolMap string `yaml:"listener_security_protocol_map" doc:"listener.security.protocol.map: NAME:PROTOCOL pairs (PLAINTEXT, SSL); empty is Kafka's default, where each protocol name is a listener of that protocol."`
	InterBrokerListenerName     string `yaml:"inter_broker_listener_name" doc:"inter.broker.listener.name: the listener other brokers dial (registered as the broker's host and port); empty is PLAINTEXT."`
	SSLCertificateLocation      string `yaml:"ssl_certificate_location" doc:"PEM certificate chain (leaf first) of the SSL listeners; reloaded when the file changes."`
	SSLKeyLocation              string `yaml:"ssl_key_location" doc:"PEM private key of ssl_certificate_location; reloaded when the file changes."`
	SSLCALocation               string `yaml:"ssl_ca_location" doc:"PEM CA certificates that client certificates must chain to (needed by ssl_client_auth requested or required)."`
	SSLClientAuth               string `yaml:"ssl_client_auth" doc:"ssl.client.auth: none, requested or required; a verified client certificate's subject is the principal (User:CN=...)."`
	SASLEnabledMechanisms       string `yaml:"sasl_enabled_mechanisms" doc:"sasl.enabled.mechanisms of the SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (comma-separated)."`
	SASLPlainUsersFile          string `yaml:"sasl_plain_users_file" doc:"File of user:password lines that PLAIN checks against (read again when it changes); needed when PLAIN is enabled."`

	SASLOAuthBearerJWKSEndpointURL          string        `yaml:"sasl_oauthbearer_jwks_endpoint_url" doc:"sasl.oauthbearer.jwks.endpoint.url: https://, http:// or file:// URL of the JWKS that OAUTHBEARER tokens are verified with (a file is reloaded when it changes); needed when OAUTHBEARER is enabled."`
	SASLOAuthBearerJWKSEndpointRefresh      time.Duration `yaml:"sasl_oauthbearer_jwks_endpoint_refresh" doc:"sasl.oauthbearer.jwks.endpoint.refresh.ms: how old a fetched JWKS may get before a login fetches it again."`
	SASLOAuthBearerJWKSEndpointRetryBackoff time.Duration `yaml:"sasl_oauthbearer_jwks_endpoint_retry_backoff" doc:"Least time between two JWKS fetches (after a failure, or for a token whose kid the JWKS lacks)."`
	SASLOAuthBearerJWKSEndpointTimeout      time.Duration `yaml:"sasl_oauthbearer_jwks_endpoint_timeout" doc:"Bound on one JWKS fetch."`
	SASLOAuthBearerExpectedIssuer           string        `yaml:"sasl_oauthbearer_expected_issuer" doc:"sasl.oauthbearer.expected.issuer: when set, a token's iss claim must equal it."`
	SASLOAuthBearerExpectedAudience         string        `yaml:"sasl_oauthbearer_expected_audience" doc:"sasl.oauthbearer.expected.audience: comma-separated; when set, a token's aud claim must name one of them."`
	SASLOAuthBearerSubClaimName             string        `yaml:"sasl_oauthbearer_sub_claim_name" doc:"sasl.oauthbearer.sub.claim.name: the claim whose value is the principal (User:<value>)."`
	SASLOAuthBearerClockSkew                time.Duration `yaml:"sasl_oauthbearer_clock_skew" doc:"sasl.oauthbearer.clock.skew.seconds: how far a token's exp, iat and nbf may be off this node's clock."`
	ConnectionsMaxReauth                    time.Duration `yaml:"connections_max_reauth" doc:"connections.max.reauth.ms (KIP-368): when positive, a SASL session lasts at most this long (less when its token expires sooner), clients re-authenticate on the same connection, and one that did not is closed at its next request; 0 gives sessions no end."`
	DelegationTokenSecretKey                string        `yaml:"delegation_token_secret_key" doc:"delegation.token.secret.key: the key the HMAC of every delegation token (KIP-48) is made with; the same on every node. Empty turns delegation tokens off (DELEGATION_TOKEN_AUTH_DISABLED). Prefer SHALE_DELEGATION_TOKEN_SECRET_KEY to a file or flag."`
	DelegationTokenMaxLifetime              time.Duration `yaml:"delegation_token_max_lifetime" doc:"delegation.token.max.lifetime.ms: a token lives at most this long, however often renewed; a request may ask for less."`
	DelegationTokenExpiryTime               time.Duration `yaml:"delegation_token_expiry_time" doc:"delegation.token.expiry.time.ms: a token expires this long after its creation or last renewal unless renewed; a renewal may ask for less."`
	DelegationTokenExpiryCheckInterval      time.Duration `yaml:"delegation_token_expiry_check_interval" doc:"delegation.token.expiry.check.interval.ms: how often each node removes the expired tokens from the control plane (an expired token is refused at once either way)."`
	SSLPrincipalMappingRules                string        `yaml:"ssl_principal_mapping_rules" doc:"ssl.principal.mapping.rules (KIP-371): comma-separated RULE:pattern/replacement/[LU] rules and DEFAULT, applied in order to a client certificate's subject."`
	Authorizer                              string        `yaml:"authorizer" doc:"authorizer.class.name: empty (no ACLs: every client may do everything) or standard (Kafka's StandardAuthorizer: ACLs in the control plane, managed with CreateAcls, DescribeAcls, DeleteAcls and shale acl)."`
	SuperUsers                              string        `yaml:"super_users" doc:"super.users: principals separated by ';' (User:admin;User:broker) that the authorizer allows everything; include the principal the nodes use towards each other. Never User:ANONYMOUS on a node with a PLAINTEXT listener or an SSL one whose ssl_client_auth is none or requested: every client of it would be a super user (the node warns at start)."`
	AllowEveryoneIfNoACLFound               bool          `yaml:"allow_everyone_if_no_acl_found" doc:"allow.everyone.if.no.acl.found: with the authorizer on, an action on a resource that no ACL applies to is allowed."`
	// The node's side of the inter-broker listener: how it dials and logs
	// in to the other nodes (interbroker.go).
	SASLMechanismInterBrokerProtocol string        `yaml:"sasl_mechanism_inter_broker_protocol" doc:"sasl.mechanism.inter.broker.protocol: the SASL mechanism this node logs in to other nodes with when the inter-broker listener is SASL_PLAINTEXT or SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); empty is the first of sasl_enabled_mechanisms."`
	InterBrokerSASLUsername          string        `yaml:"inter_broker_sasl_username" doc:"User this node logs in to other nodes as on a SASL inter-broker listener (Kafka's JAAS username); its principal is User:<name>. A SCRAM credential for it is created at start when none exists."`
	InterBrokerSASLPassword          string        `yaml:"inter_broker_sasl_password" doc:"Password of inter_broker_sasl_username; prefer SHALE_INTER_BROKER_SASL_PASSWORD or inter_broker_sasl_password_file to a flag."`
	InterBrokerSASLPasswordFile      string        `yaml:"inter_broker_sasl_password_file" doc:"File whose first line is the password of inter_broker_sasl_username (instead of inter_broker_sasl_password), read at start."`
	InterBrokerSSLCALocation         string        `yaml:"inter_broker_ssl_ca_location" doc:"PEM CA certificates that the other nodes' certificates must chain to on an SSL or SASL_SSL inter-broker listener; empty is ssl_ca_location, and without either the system's roots."`
	AdminListen                      string        `yaml:"admin_listen" doc:"HTTP address for /healthz and /readyz; empty disables it."`
	AdminSSLCertificateLocation      string        `yaml:"admin_ssl_certificate_location" doc:"PEM certificate chain of the admin HTTP listener; with admin_ssl_key_location it serves HTTPS only (TLS 1.2+), reloaded when the files change. Empty serves plain HTTP."`
	AdminSSLKeyLocation              string        `yaml:"admin_ssl_key_location" doc:"PEM private key of admin_ssl_certificate_location."`
	AdminSSLCALocation               string        `yaml:"admin_ssl_ca_location" doc:"PEM CA certificates that admin clients' certificates must chain to (admin_ssl_client_auth)."`
	AdminSSLClientAuth               string        `yaml:"admin_ssl_client_auth" doc:"none (default), requested or required: a client certificate verified against admin_ssl_ca_location authenticates an admin request."`
	AdminAuthTokensFile              string        `yaml:"admin_auth_tokens_file" doc:"File of bearer tokens (one per line, at least 16 characters, # comments), each optionally followed by its role, read or admin (none: admin), that authenticate admin requests (Authorization: Bearer <token>, or from a browser the password of HTTP Basic); reloaded when it changes. With it or admin_ssl_client_auth set, every admin request (the web console too) needs credentials, and a request that changes something (any method but GET, HEAD, OPTIONS: the console's actions) an admin token or a client certificate."`
	AdminHealthUnauthenticated       bool          `yaml:"admin_health_unauthenticated" doc:"Serve /healthz and /readyz without credentials (load balancers, probes) when the admin listener authenticates."`
	ConsumerLagSampleInterval        time.Duration `yaml:"consumer_lag_sample_interval" doc:"How often a node samples the lag of the consumer groups it coordinates (the kafka_consumergroup_lag series, /v1/groups/lag); 0 turns sampling off."`
	AdminPprofEnable                 bool          `yaml:"admin_pprof_enable" doc:"Serve Go's profiler under /debug/pprof/ on the admin listener; off by default (it shows the process's memory, stacks and command line)."`
	Rack                             string        `yaml:"rack" doc:"Rack (or zone) of this node (broker.rack), for rack-aware replica placement and, with replica_selector_class, for serving consumers of the same rack (client.rack, KIP-392)."`
	ReplicaSelectorClass             string        `yaml:"replica_selector_class" doc:"replica.selector.class (KIP-392): empty, Kafka's default, has leaders serve every consumer; org.apache.kafka.common.replica.RackAwareReplicaSelector has a leader name an in-sync replica in the consumer's rack (its client.rack) as the preferred read replica, which then serves that consumer's fetches up to its high watermark. Followers serve consumers that fetch from them either way."`

	NATS         string `yaml:"nats" doc:"Comma-separated NATS URLs of an external cluster; empty starts the embedded server."`
	NATSListen   string `yaml:"nats_listen" doc:"Address of the embedded NATS server (loopback)."`
	NATSReplicas int    `yaml:"nats_replicas" doc:"Replicas of the control plane's JetStream buckets."`
	NATSCreds    string `yaml:"nats_creds" doc:"NATS credentials file (JWT and nkey seed) for an external cluster."`
	NATSUser     string `yaml:"nats_user" doc:"NATS user name for an external cluster (with nats_password)."`
	NATSPassword string `yaml:"nats_password" doc:"NATS password; prefer SHALE_NATS_PASSWORD to a file or flag."`
	NATSTLSCA    string `yaml:"nats_tls_ca" doc:"CA certificate file to verify an external NATS cluster's TLS certificates."`
	NATSTLSCert  string `yaml:"nats_tls_cert" doc:"Client certificate file for NATS TLS (with nats_tls_key)."`
	NATSTLSKey   string `yaml:"nats_tls_key" doc:"Client key file for NATS TLS."`

	BrokerSessionTimeout time.Duration `yaml:"broker_session_timeout" doc:"How long a broker registration lives without keepalive; a leader whose registration is this old steps down once the followers that could replace it stop fetching from it."`
	ReplicaLagTimeMax    time.Duration `yaml:"replica_lag_time_max" doc:"replica.lag.time.max.ms: a follower not caught up for this long leaves the ISR."`
	ControllerLease      time.Duration `yaml:"controller_lease" doc:"How long the controller lease lives without renewal; another node takes over within about this time."`
	// InitialBrokerRegistrationTimeout bounds a node's start-up wait for the
	// control plane, as Kafka's bounds a broker's wait for its controllers.
	InitialBrokerRegistrationTimeout time.Duration `yaml:"initial_broker_registration_timeout" doc:"initial.broker.registration.timeout.ms: how long a starting node waits for the control plane (connecting to an external NATS, opening the broker registry, registering) before it gives up and exits; a NATS that is busy, paused or restarting meanwhile is waited for."`

	AutoLeaderRebalanceEnable          bool          `yaml:"auto_leader_rebalance_enable" doc:"auto.leader.rebalance.enable: the controller moves leadership back to each partition's preferred (first assigned) replica when a broker's share of partitions led elsewhere is above leader_imbalance_per_broker_percentage, and only to a replica that is live, unfenced and in the ISR."`
	LeaderImbalanceCheckInterval       time.Duration `yaml:"leader_imbalance_check_interval" doc:"leader.imbalance.check.interval.seconds: how often the controller checks the preferred-leader imbalance (the first check one interval after it takes the lease)."`
	LeaderImbalancePerBrokerPercentage int           `yaml:"leader_imbalance_per_broker_percentage" doc:"leader.imbalance.per.broker.percentage: a broker's preferred partitions move back only when more than this percentage of them is led by other brokers (0..100)."`

	BalancerEnable      bool          `yaml:"balancer_enable" doc:"The controller's replica balancer: it spreads replicas and preferred leaders evenly over the live brokers that are not draining (rack-aware) and empties the brokers being decommissioned, through KIP-455 reassignments. Off: replicas move only by hand, and a decommission waits."`
	BalancerMaxMoves    int           `yaml:"balancer_max_moves" doc:"Reassignments in progress at once that the balancer allows (its own and any other); each copies one partition's local tail to a new replica (1..1000)."`
	BalancerReplicaSkew int           `yaml:"balancer_replica_skew" doc:"The balancer moves replicas only while the most and the least loaded broker differ by more than this many replicas (at least 1)."`
	BalancerInterval    time.Duration `yaml:"balancer_interval" doc:"How often the controller plans a balancer pass (at least 100ms)."`

	NumReplicaFetchers           int           `yaml:"num_replica_fetchers" doc:"num.replica.fetchers: fetchers (each its own connection) per leader node on a follower; partitions are spread over them by a stable hash of topic and partition."`
	ReplicaFetchMinBytes         int32         `yaml:"replica_fetch_min_bytes" doc:"replica.fetch.min.bytes: a follower fetch waits on the leader until this many bytes are ready (or replica_fetch_wait_max)."`
	ReplicaFetchMaxBytes         int32         `yaml:"replica_fetch_max_bytes" doc:"replica.fetch.max.bytes: bytes per partition in a follower fetch (the first batch is sent even when larger)."`
	ReplicaFetchResponseMaxBytes int32         `yaml:"replica_fetch_response_max_bytes" doc:"replica.fetch.response.max.bytes: bytes in a whole follower fetch response (the first batch is sent even when larger)."`
	ReplicaFetchWaitMax          time.Duration `yaml:"replica_fetch_wait_max" doc:"replica.fetch.wait.max.ms: how long the leader holds a follower fetch with fewer than replica_fetch_min_bytes ready; below replica_lag_time_max."`

	MaxIncrementalFetchSessionCacheSlots int `yaml:"max_incremental_fetch_session_cache_slots" doc:"max.incremental.fetch.session.cache.slots: incremental fetch sessions (KIP-227) this node keeps for consumers and followers; 0 declines every session (full fetches only)."`

	AutoCreateTopics                  bool          `yaml:"auto_create_topics_enable" doc:"auto.create.topics.enable: create unknown topics named in Metadata requests that allow it."`
	NumPartitions                     int32         `yaml:"num_partitions" doc:"num.partitions: partitions of an auto-created topic or one created with -1."`
	DefaultReplicationFactor          int16         `yaml:"default_replication_factor" doc:"default.replication.factor."`
	OffsetsTopicNumPartitions         int32         `yaml:"offsets_topic_num_partitions" doc:"offsets.topic.num.partitions: partitions of __consumer_offsets (a group maps to hash % this); every node of a cluster must agree, and it cannot change once the topic exists."`
	OffsetsTopicReplicationFactor     int16         `yaml:"offsets_topic_replication_factor" doc:"offsets.topic.replication.factor: replicas of __consumer_offsets when it is created, capped at the brokers live at that moment (start every broker before the first consumer group)."`
	OffsetsRetention                  time.Duration `yaml:"offsets_retention" doc:"offsets.retention.minutes: how long a group's committed offsets are kept once the group is empty (a classic group, from when it became empty), or after their commit (a standalone commit; an offset of a topic no live member of a consumer group subscribes to); an empty group left with no offsets is deleted. Kafka counts it in minutes (at least 1); Shale takes any duration."`
	OffsetsRetentionCheckInterval     time.Duration `yaml:"offsets_retention_check_interval" doc:"offsets.retention.check.interval.ms: how often each group coordinator looks for expired offsets and empty groups to delete."`
	GroupConsumerSessionTimeout       time.Duration `yaml:"group_consumer_session_timeout" doc:"group.consumer.session.timeout.ms: how long a KIP-848 consumer group member may go without a heartbeat before it is fenced and its partitions reassigned."`
	GroupConsumerHeartbeatInterval    time.Duration `yaml:"group_consumer_heartbeat_interval" doc:"group.consumer.heartbeat.interval.ms: the heartbeat interval KIP-848 consumer group members are told to use; below group_consumer_session_timeout."`
	GroupConsumerMigrationPolicy      string        `yaml:"group_consumer_migration_policy" doc:"group.consumer.migration.policy: the online conversions between classic and KIP-848 consumer groups: bidirectional (a consumer-protocol member joining a classic group upgrades it, the last one leaving downgrades it), upgrade, downgrade or disabled."`
	GroupConsumerMaxSize              int           `yaml:"group_consumer_max_size" doc:"group.consumer.max.size: members of one KIP-848 consumer group at most; a member that would join past it gets GROUP_MAX_SIZE_REACHED, and a classic group larger than it is not upgraded (at least 1)."`
	GroupShareMaxSize                 int           `yaml:"group_share_max_size" doc:"group.share.max.size: members of one share group at most; a member that would join past it gets GROUP_MAX_SIZE_REACHED (1..1000)."`
	GroupShareRecordLockDuration      time.Duration `yaml:"group_share_record_lock_duration" doc:"group.share.record.lock.duration.ms: how long a share group member holds a record it fetched before the record is released to the group again (KIP-932)."`
	GroupShareDeliveryCountLimit      int16         `yaml:"group_share_delivery_count_limit" doc:"group.share.delivery.count.limit: deliveries of a record to share group members before it is archived instead of delivered again."`
	GroupSharePartitionMaxRecordLocks int           `yaml:"group_share_partition_max_record_locks" doc:"group.share.partition.max.record.locks: records of one share-partition in flight (acquired or waiting for redelivery) at most."`
	GroupShareSessionTimeout          time.Duration `yaml:"group_share_session_timeout" doc:"group.share.session.timeout.ms: how long a share group member may go without a heartbeat before it is removed and its records released."`
	GroupShareHeartbeatInterval       time.Duration `yaml:"group_share_heartbeat_interval" doc:"group.share.heartbeat.interval.ms: the heartbeat interval share group members are told to use; below group_share_session_timeout."`
	ShareAutoOffsetReset              string        `yaml:"share_auto_offset_reset" doc:"share.auto.offset.reset: where a share group starts on a partition it has no state for: latest (the high watermark, Kafka's default) or earliest (the log start, tiered offsets included). The default of the share.auto.offset.reset group config."`
	// The broker-wide bounds of the group configs (KIP-848, KIP-932):
	// a group's own value must lie within them.
	GroupConsumerMinSessionTimeout    time.Duration `yaml:"group_consumer_min_session_timeout" doc:"group.consumer.min.session.timeout.ms: the least consumer.session.timeout.ms a group config may set."`
	GroupConsumerMaxSessionTimeout    time.Duration `yaml:"group_consumer_max_session_timeout" doc:"group.consumer.max.session.timeout.ms: the greatest consumer.session.timeout.ms a group config may set."`
	GroupConsumerMinHeartbeatInterval time.Duration `yaml:"group_consumer_min_heartbeat_interval" doc:"group.consumer.min.heartbeat.interval.ms: the least consumer.heartbeat.interval.ms a group config may set."`
	GroupConsumerMaxHeartbeatInterval time.Duration `yaml:"group_consumer_max_heartbeat_interval" doc:"group.consumer.max.heartbeat.interval.ms: the greatest consumer.heartbeat.interval.ms a group config may set."`
	GroupShareMinSessionTimeout       time.Duration `yaml:"group_share_min_session_timeout" doc:"group.share.min.session.timeout.ms: the least share.session.timeout.ms a group config may set."`
	GroupShareMaxSessionTimeout       time.Duration `yaml:"group_share_max_session_timeout" doc:"group.share.max.session.timeout.ms: the greatest share.session.timeout.ms a group config may set."`
	GroupShareMinHeartbeatInterval    time.Duration `yaml:"group_share_min_heartbeat_interval" doc:"group.share.min.heartbeat.interval.ms: the least share.heartbeat.interval.ms a group config may set."`
	GroupShareMaxHeartbeatInterval    time.Duration `yaml:"group_share_max_heartbeat_interval" doc:"group.share.max.heartbeat.interval.ms: the greatest share.heartbeat.interval.ms a group config may set."`
	GroupShareMinRecordLockDuration   time.Duration `yaml:"group_share_min_record_lock_duration" doc:"group.share.min.record.lock.duration.ms: the least share.record.lock.duration.ms a group config may set."`
	GroupShareMaxRecordLockDuration   time.Duration `yaml:"group_share_max_record_lock_duration" doc:"group.share.max.record.lock.duration.ms: the greatest share.record.lock.duration.ms a group config may set."`
	GroupShareMinDeliveryCountLimit   int16         `yaml:"group_share_min_delivery_count_limit" doc:"group.share.min.delivery.count.limit: the least share.delivery.count.limit a group config may set."`
	GroupShareMaxDeliveryCountLimit   int16         `yaml:"group_share_max_delivery_count_limit" doc:"group.share.max.delivery.count.limit: the greatest share.delivery.count.limit a group config may set."`
	MaxRequestBytes                   int32         `yaml:"socket_request_max_bytes" doc:"socket.request.max.bytes: largest request accepted."`
	TelemetryMaxBytes                 int32         `yaml:"telemetry_max_bytes" doc:"telemetry.max.bytes: largest metrics payload, as sent (compressed), a client may push with PushTelemetry (KIP-714); a larger one is TELEMETRY_TOO_LARGE. GetTelemetrySubscriptions tells clients this bound."`

	SASLServerMaxReceiveSize            int32         `yaml:"sasl_server_max_receive_size" doc:"sasl.server.max.receive.size: on a SASL listener, largest request accepted before the client has authenticated (a larger one closes the connection as a failed authentication); before authentication requests are also read one at a time."`
	MaxConnections                      int           `yaml:"max_connections" doc:"max.connections: Kafka connections this node accepts over all its listeners; one over it is closed at accept (logged, at most five lines a second), except on the inter-broker listener, whose connections are always accepted."`
	MaxConnectionsPerIP                 int           `yaml:"max_connections_per_ip" doc:"max.connections.per.ip: Kafka connections this node accepts from one client IP address over all its listeners (the inter-broker one included); one over it is closed at accept. 0 is allowed with max_connections_per_ip_overrides: only the addresses named connect."`
	MaxConnectionsPerIPOverrides        string        `yaml:"max_connections_per_ip_overrides" doc:"max.connections.per.ip.overrides: comma-separated ip:count pairs (127.0.0.1:200,10.0.0.7:50, [::1]:10) that replace max_connections_per_ip for those addresses; IP addresses only (Kafka also resolves host names once, which then go stale)."`
	ConnectionFailedAuthenticationDelay time.Duration `yaml:"connection_failed_authentication_delay" doc:"connection.failed.authentication.delay.ms: the answer to a failed SASL authentication is sent this long after the failure, and the connection closed after it; nothing more is read meanwhile. 0 answers at once."`

	TransactionVersion                   int16         `yaml:"transaction_version" doc:"transaction.version: the finalized level of Kafka's transaction.version feature that ApiVersions advertises (0-2). 2 (Kafka 4's default for a new cluster) has clients that support it use transactions v2 (KIP-890 part 2: an epoch bump at each commit or abort, partitions added by Produce itself); 0 or 1 keeps every client on the explicit AddPartitionsToTxn protocol. Every node of a cluster should agree."`
	TransactionMaxTimeout                time.Duration `yaml:"transaction_max_timeout" doc:"transaction.max.timeout.ms: the largest transaction timeout a producer may ask for in InitProducerId (INVALID_TRANSACTION_TIMEOUT above it)."`
	TransactionAbortCheckInterval        time.Duration `yaml:"transaction_abort_timed_out_transaction_cleanup_interval" doc:"transaction.abort.timed.out.transaction.cleanup.interval.ms: how often the transaction coordinator aborts the transactions older than their timeout."`
	TransactionalIDExpiration            time.Duration `yaml:"transactional_id_expiration" doc:"transactional.id.expiration.ms: a transactional id with no transaction open and no state change for this long is removed from __transaction_state (its next InitProducerId gets a new producer id)."`
	TransactionIDExpirationCheckInterval time.Duration `yaml:"transaction_remove_expired_transaction_cleanup_interval" doc:"transaction.remove.expired.transaction.cleanup.interval.ms: how often the transaction coordinator looks for expired transactional ids."`
	TransactionStateLogNumPartitions     int32         `yaml:"transaction_state_log_num_partitions" doc:"transaction.state.log.num.partitions: partitions of __transaction_state; every node of a cluster must agree, and it cannot change once the topic exists."`
	TransactionStateLogReplicationFactor int16         `yaml:"transaction_state_log_replication_factor" doc:"transaction.state.log.replication.factor: replicas of __transaction_state when it is created, capped at the brokers live at that moment."`
	TransactionStateLogMinISR            int16         `yaml:"transaction_state_log_min_isr" doc:"transaction.state.log.min.isr: min.insync.replicas of __transaction_state (at most its replication factor)."`

	ProducerIDExpiration              time.Duration `yaml:"producer_id_expiration" doc:"producer.id.expiration.ms: a partition forgets an idempotent or transactional producer whose last batch's timestamp is this old and that has no transaction open there (each replica on its own); the producer's next batch is then taken as a new producer's, with any sequence."`
	ProducerIDExpirationCheckInterval time.Duration `yaml:"producer_id_expiration_check_interval" doc:"producer.id.expiration.check.interval.ms: how often each partition looks for expired producers."`

	RetentionCheckInterval time.Duration `yaml:"retention_check_interval" doc:"log.retention.check.interval.ms."`
	FlushCheckInterval     time.Duration `yaml:"flush_check_interval" doc:"log.flush.scheduler.interval.ms."`
	LogWritebackBytes      int64         `yaml:"log_writeback_bytes" doc:"Start writing a partition's active segment out to disk after every this many bytes appended (sync_file_range, like RocksDB's bytes_per_sync; not an fsync), so that dirty pages do not pile up for the kernel to write back in bursts that stall appends; 0 leaves it to the kernel."`
	// NumRecoveryThreadsPerDataDir bounds the partitions a node opens and
	// recovers at once at start (replica.Manager.Reconcile).
	NumRecoveryThreadsPerDataDir int           `yaml:"num_recovery_threads_per_data_dir" doc:"num.recovery.threads.per.data.dir: partitions a node opens and recovers at once when it starts (each re-reads what its log holds past its recovery point after an unclean stop), and when many are assigned to it at once."`
	ShutdownTimeout              time.Duration `yaml:"shutdown_timeout" doc:"How long a graceful stop waits for in-flight requests."`

	RequestLogSlowThreshold time.Duration `yaml:"request_log_slow_threshold" doc:"A request whose total time exceeds this logs one Info line with its API, version, correlation id, client id and stage breakdown in ms (at most 5 lines per second per node); 0 disables."`

	QuotaWindowNum  int           `yaml:"quota_window_num" doc:"quota.window.num: client quota rates are measured over this many sample windows."`
	QuotaWindowSize time.Duration `yaml:"quota_window_size" doc:"quota.window.size.seconds: the span of one client quota sample window."`

	LogLevel  string `yaml:"log_level" doc:"debug, info, warn or error."`
	LogFormat string `yaml:"log_format" doc:"text or json."`

	S3Endpoint       string        `yaml:"s3_endpoint" doc:"S3 endpoint URL of the cold tier (MinIO, versitygw, ...); empty with an empty s3_bucket uses the filesystem bucket under data_dir/bucket."`
	S3Bucket         string        `yaml:"s3_bucket" doc:"S3 bucket of the cold tier; credentials come from the standard AWS chain."`
	S3Region         string        `yaml:"s3_region" doc:"S3 region."`
	S3Prefix         string        `yaml:"s3_prefix" doc:"Key prefix of every object Shale writes to the bucket."`
	S3PathStyle      bool          `yaml:"s3_path_style" doc:"Path-style S3 addressing (MinIO and most S3-compatible stores)."`
	S3RequestTimeout time.Duration `yaml:"s3_request_timeout" doc:"Bound on one object-store request attempt (a stalled request is retried after it)."`

	RemoteStorageEnableDefault bool          `yaml:"remote_storage_enable_default" doc:"Broker default of the topic config remote.storage.enable."`
	TieringInterval            time.Duration `yaml:"tiering_interval" doc:"How often the tiering loop uploads closed segments and applies remote retention."`
	OrphanGrace                time.Duration `yaml:"remote_orphan_grace" doc:"An object in the bucket that no committed metadata references is deleted once older than this."`
	DiskHighWatermark          float64       `yaml:"disk_high_watermark" doc:"Used fraction of the data directory's filesystem above which produce gets a retriable KAFKA_STORAGE_ERROR; 0 disables."`

	// ListenerName holds per-listener settings, Kafka's
	// listener.name.<name>.ssl.*: listener_name: {CLIENTS: {ssl_client_auth: required}}.
	ListenerName map[string]ListenerSettings `yaml:"listener_name" doc:"Per-listener TLS settings by listener name (Kafka's listener.name.<name>.ssl.*); see ListenerSettings."`

	// TopicDefaults are broker-wide topic config defaults with Kafka's topic
	// config names (retention.ms: 3600000).
	TopicDefaults map[string]string `yaml:"topic_defaults" doc:"Broker-wide defaults for topic configs, by topic config name."`

	// resolved are the listeners Validate put together (ListenerConfigs).
	resolved []Listener
}

// AuthorizerStandard is the authorizer setting that turns ACLs on.
const AuthorizerStandard = "standard"

// Defaults returns the configuration of `make run`: one node on loopback.
func Defaults() Broker {
	return Broker{
		NodeID:                0,
		DataDir:               "./data",
		Listen:                "127.0.0.1:9092",
		AdminListen:           "127.0.0.1:9644",
		SASLEnabledMechanisms: "SCRAM-SHA-256,SCRAM-SHA-512",

		SASLOAuthBearerJWKSEndpointRefresh:      time.Hour,
		SASLOAuthBearerJWKSEndpointRetryBackoff: 10 * time.Second,
		SASLOAuthBearerJWKSEndpointTimeout:      10 * time.Second,
		SASLOAuthBearerSubClaimName:             "sub",
		SASLOAuthBearerClockSkew:                30 * time.Second,
		DelegationTokenMaxLifetime:              7 * 24 * time.Hour,
		DelegationTokenExpiryTime:               24 * time.Hour,
		DelegationTokenExpiryCheckInterval:      time.Hour,
		SSLPrincipalMappingRules:                "DEFAULT",

		NATSListen:                          "127.0.0.1:4222",
		NATSReplicas:                        1,
		BrokerSessionTimeout:                6 * time.Second,
		ControllerLease:                     3 * time.Second,
		InitialBrokerRegistrationTimeout:    60 * time.Second,
		AutoLeaderRebalanceEnable:           true,
		LeaderImbalanceCheckInterval:        300 * time.Second,
		LeaderImbalancePerBrokerPercentage:  10,
		BalancerEnable:                      true,
		BalancerMaxMoves:                    8,
		BalancerReplicaSkew:                 2,
		BalancerInterval:                    time.Second,
		ReplicaLagTimeMax:                   30 * time.Second,
		NumReplicaFetchers:                  1,
		ReplicaFetchMinBytes:                1,
		ReplicaFetchMaxBytes:                1 << 20,
		ReplicaFetchResponseMaxBytes:        10 << 20,
		ReplicaFetchWaitMax:                 500 * time.Millisecond,
		S3RequestTimeout:                    2 * time.Minute,
		AutoCreateTopics:                    true,
		NumPartitions:                       1,
		DefaultReplicationFactor:            1,
		OffsetsTopicNumPartitions:           50,
		OffsetsTopicReplicationFactor:       3,
		OffsetsRetention:                    7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval:       10 * time.Minute,
		GroupConsumerSessionTimeout:         45 * time.Second,
		GroupConsumerHeartbeatInterval:      5 * time.Second,
		GroupConsumerMaxSize:                math.MaxInt32,
		GroupShareMaxSize:                   200,
		GroupShareRecordLockDuration:        30 * time.Second,
		GroupShareDeliveryCountLimit:        5,
		GroupSharePartitionMaxRecordLocks:   2000,
		GroupShareSessionTimeout:            45 * time.Second,
		GroupShareHeartbeatInterval:         5 * time.Second,
		ShareAutoOffsetReset:                "latest",
		GroupConsumerMinSessionTimeout:      45 * time.Second,
		GroupConsumerMaxSessionTimeout:      60 * time.Second,
		GroupConsumerMinHeartbeatInterval:   5 * time.Second,
		GroupConsumerMaxHeartbeatInterval:   15 * time.Second,
		GroupShareMinSessionTimeout:         45 * time.Second,
		GroupShareMaxSessionTimeout:         60 * time.Second,
		GroupShareMinHeartbeatInterval:      5 * time.Second,
		GroupShareMaxHeartbeatInterval:      15 * time.Second,
		GroupShareMinRecordLockDuration:     15 * time.Second,
		GroupShareMaxRecordLockDuration:     60 * time.Second,
		GroupShareMinDeliveryCountLimit:     2,
		GroupShareMaxDeliveryCountLimit:     10,
		GroupConsumerMigrationPolicy:        "bidirectional",
		MaxRequestBytes:                     100 << 20,
		TelemetryMaxBytes:                   1 << 20,
		SASLServerMaxReceiveSize:            524288,
		MaxConnections:                      math.MaxInt32,
		MaxConnectionsPerIP:                 math.MaxInt32,
		ConnectionFailedAuthenticationDelay: 100 * time.Millisecond,
		ProducerIDExpiration:                24 * time.Hour,
		ProducerIDExpirationCheckInterval:   10 * time.Minute,
		RetentionCheckInterval:              30 * time.Second,
		ConsumerLagSampleInterval:           30 * time.Second,
		FlushCheckInterval:                  time.Second,
		LogWritebackBytes:                   1 << 20,
		NumRecoveryThreadsPerDataDir:        8,
		ShutdownTimeout:                     10 * time.Second,
		QuotaWindowNum:                      11,
		QuotaWindowSize:                     time.Second,
		LogLevel:                            "info",
		LogFormat:                           "text",
		TopicDefaults:                       map[string]string{},

		MaxIncrementalFetchSessionCacheSlots: 1000,

		TransactionVersion:                   2,
		TransactionMaxTimeout:                15 * time.Minute,
		TransactionAbortCheckInterval:        10 * time.Second,
		TransactionalIDExpiration:            7 * 24 * time.Hour,
		TransactionIDExpirationCheckInterval: time.Hour,
		TransactionStateLogNumPartitions:     50,
		TransactionStateLogReplicationFactor: 3,
		TransactionStateLogMinISR:            2,

		RemoteStorageEnableDefault: true,
		TieringInterval:            5 * time.Second,
		OrphanGrace:                5 * time.Minute,
		DiskHighWatermark:          0.95,
	}
}

// Validate checks the configuration and fills derived values (Advertise).
func (b *Broker) Validate() error {
	if b.Authorizer != "" && b.Authorizer != AuthorizerStandard {
		return fmt.Errorf("%w: authorizer %q: want empty or %s", ErrInvalidConfig, b.Authorizer, AuthorizerStandard)
	}
	if b.NodeID < 0 {
		return fmt.Errorf("%w: node_id %d is negative", ErrInvalidConfig, b.NodeID)
	}
	if b.DelegationTokenMaxLifetime < time.Millisecond || b.DelegationTokenExpiryTime < time.Millisecond || b.DelegationTokenExpiryCheckInterval < time.Millisecond {
		return fmt.Errorf("%w: delegation_token_max_lifetime, delegation_token_expiry_time and delegation_token_expiry_check_interval must be at least 1ms", ErrInvalidConfig)
	}
	if b.DataDir == "" {
		return fmt.Errorf("%w: data_dir is empty", ErrInvalidConfig)
	}
	if _, _, err := net.SplitHostPort(b.Listen); err != nil {
		return fmt.Errorf("%w: listen %q: %v", ErrInvalidConfig, b.Listen, err)
	}
	if b.Advertise == "" {
		b.Advertise = b.Listen
	}
	if _, port, err := net.SplitHostPort(b.Advertise); err != nil || port == "" {
		return fmt.Errorf("%w: advertise %q: want host:port", ErrInvalidConfig, b.Advertise)
	}
	if err := b.resolveListeners(); err != nil {
		return err
	}
	if b.BrokerSessionTimeout < time.Second || b.ControllerLease < time.Second {
		return fmt.Errorf("%w: broker_session_timeout and controller_lease must be at least 1s", ErrInvalidConfig)
	}
	if b.InitialBrokerRegistrationTimeout < time.Second {
		return fmt.Errorf("%w: initial_broker_registration_timeout %v: want at least 1s", ErrInvalidConfig, b.InitialBrokerRegistrationTimeout)
	}
	if b.LeaderImbalanceCheckInterval < time.Second {
		return fmt.Errorf("%w: leader_imbalance_check_interval %v: want at least 1s", ErrInvalidConfig, b.LeaderImbalanceCheckInterval)
	}
	if p := b.LeaderImbalancePerBrokerPercentage; p < 0 || p > 100 {
		return fmt.Errorf("%w: leader_imbalance_per_broker_percentage %d: want 0..100", ErrInvalidConfig, p)
	}
	if b.BalancerMaxMoves < 1 || b.BalancerMaxMoves > 1000 {
		return fmt.Errorf("%w: balancer_max_moves %d: want 1..1000", ErrInvalidConfig, b.BalancerMaxMoves)
	}
	if b.BalancerReplicaSkew < 1 {
		return fmt.Errorf("%w: balancer_replica_skew %d: want at least 1", ErrInvalidConfig, b.BalancerReplicaSkew)
	}
	if b.BalancerInterval < 100*time.Millisecond {
		return fmt.Errorf("%w: balancer_interval %v: want at least 100ms", ErrInvalidConfig, b.BalancerInterval)
	}
	if b.NumReplicaFetchers < 1 || b.NumReplicaFetchers > 64 {
		return fmt.Errorf("%w: num_replica_fetchers %d: want 1..64", ErrInvalidConfig, b.NumReplicaFetchers)
	}
	if b.ReplicaFetchMinBytes < 1 || b.ReplicaFetchMaxBytes < 1 || b.ReplicaFetchResponseMaxBytes < 1 {
		return fmt.Errorf("%w: replica_fetch_min_bytes, replica_fetch_max_bytes and replica_fetch_response_max_bytes must be positive", ErrInvalidConfig)
	}
	if b.ReplicaSelectorClass != "" && b.ReplicaSelectorClass != RackAwareReplicaSelector {
		return fmt.Errorf("%w: replica_selector_class %q: only %s is built in", ErrInvalidConfig, b.ReplicaSelectorClass, RackAwareReplicaSelector)
	}
	if b.MaxIncrementalFetchSessionCacheSlots < 0 {
		return fmt.Errorf("%w: max_incremental_fetch_session_cache_slots %d is negative", ErrInvalidConfig, b.MaxIncrementalFetchSessionCacheSlots)
	}
	if b.NumRecoveryThreadsPerDataDir < 1 {
		return fmt.Errorf("%w: num_recovery_threads_per_data_dir %d", ErrInvalidConfig, b.NumRecoveryThreadsPerDataDir)
	}
	if b.LogWritebackBytes < 0 {
		return fmt.Errorf("%w: log_writeback_bytes %d is negative", ErrInvalidConfig, b.LogWritebackBytes)
	}
	if b.ReplicaFetchWaitMax < 0 || b.ReplicaFetchWaitMax >= b.ReplicaLagTimeMax {
		// As Kafka: a follower held longer than the lag limit would leave the ISR while it waits.
		return fmt.Errorf("%w: replica_fetch_wait_max %v: want 0 up to below replica_lag_time_max %v", ErrInvalidConfig, b.ReplicaFetchWaitMax, b.ReplicaLagTimeMax)
	}
	if b.NumPartitions < 1 {
		return fmt.Errorf("%w: num_partitions %d", ErrInvalidConfig, b.NumPartitions)
	}
	if b.DefaultReplicationFactor < 1 {
		return fmt.Errorf("%w: default_replication_factor %d", ErrInvalidConfig, b.DefaultReplicationFactor)
	}
	if b.OffsetsTopicNumPartitions < 1 {
		return fmt.Errorf("%w: offsets_topic_num_partitions %d", ErrInvalidConfig, b.OffsetsTopicNumPartitions)
	}
	if b.GroupConsumerMaxSize < 1 || b.GroupShareMaxSize < 1 || b.GroupShareMaxSize > 1000 {
		return fmt.Errorf("%w: group_consumer_max_size %d must be at least 1 and group_share_max_size %d within 1..1000",
			ErrInvalidConfig, b.GroupConsumerMaxSize, b.GroupShareMaxSize)
	}
	if b.OffsetsRetention < time.Millisecond || b.OffsetsRetentionCheckInterval < time.Millisecond {
		return fmt.Errorf("%w: offsets_retention %v and offsets_retention_check_interval %v must be at least 1ms",
			ErrInvalidConfig, b.OffsetsRetention, b.OffsetsRetentionCheckInterval)
	}
	if b.GroupConsumerHeartbeatInterval < time.Millisecond || b.GroupConsumerSessionTimeout <= b.GroupConsumerHeartbeatInterval {
		return fmt.Errorf("%w: group_consumer_heartbeat_interval %v must be at least 1ms and below group_consumer_session_timeout %v",
			ErrInvalidConfig, b.GroupConsumerHeartbeatInterval, b.GroupConsumerSessionTimeout)
	}
	if b.GroupShareHeartbeatInterval < time.Millisecond || b.GroupShareSessionTimeout <= b.GroupShareHeartbeatInterval {
		return fmt.Errorf("%w: group_share_heartbeat_interval %v must be at least 1ms and below group_share_session_timeout %v",
			ErrInvalidConfig, b.GroupShareHeartbeatInterval, b.GroupShareSessionTimeout)
	}
	if b.GroupShareRecordLockDuration < time.Millisecond || b.GroupShareDeliveryCountLimit < 1 || b.GroupSharePartitionMaxRecordLocks < 1 {
		return fmt.Errorf("%w: group_share_record_lock_duration %v, group_share_delivery_count_limit %d and group_share_partition_max_record_locks %d must be positive",
			ErrInvalidConfig, b.GroupShareRecordLockDuration, b.GroupShareDeliveryCountLimit, b.GroupSharePartitionMaxRecordLocks)
	}
	for _, r := range []struct {
		name     string
		min, max time.Duration
	}{
		{"group_consumer_min/max_session_timeout", b.GroupConsumerMinSessionTimeout, b.GroupConsumerMaxSessionTimeout},
		{"group_consumer_min/max_heartbeat_interval", b.GroupConsumerMinHeartbeatInterval, b.GroupConsumerMaxHeartbeatInterval},
		{"group_share_min/max_session_timeout", b.GroupShareMinSessionTimeout, b.GroupShareMaxSessionTimeout},
		{"group_share_min/max_heartbeat_interval", b.GroupShareMinHeartbeatInterval, b.GroupShareMaxHeartbeatInterval},
		{"group_share_min/max_record_lock_duration", b.GroupShareMinRecordLockDuration, b.GroupShareMaxRecordLockDuration},
		{"group_share_min/max_delivery_count_limit", time.Duration(b.GroupShareMinDeliveryCountLimit), time.Duration(b.GroupShareMaxDeliveryCountLimit)},
	} {
		if r.min < 1 || r.max < r.min || r.max > math.MaxInt32*time.Millisecond {
			return fmt.Errorf("%w: %s %v..%v: the least must be positive and at most the greatest", ErrInvalidConfig, r.name, r.min, r.max)
		}
	}
	if b.ShareAutoOffsetReset != "latest" && b.ShareAutoOffsetReset != "earliest" {
		return fmt.Errorf("%w: share_auto_offset_reset %q: latest or earliest", ErrInvalidConfig, b.ShareAutoOffsetReset)
	}
	switch b.GroupConsumerMigrationPolicy {
	case "bidirectional", "upgrade", "downgrade", "disabled":
	default:
		return fmt.Errorf("%w: group_consumer_migration_policy %q: want bidirectional, upgrade, downgrade or disabled", ErrInvalidConfig, b.GroupConsumerMigrationPolicy)
	}
	if b.OffsetsTopicReplicationFactor < 1 {
		return fmt.Errorf("%w: offsets_topic_replication_factor %d", ErrInvalidConfig, b.OffsetsTopicReplicationFactor)
	}
	if b.TransactionVersion < 0 || b.TransactionVersion > 2 {
		return fmt.Errorf("%w: transaction_version %d: want 0..2", ErrInvalidConfig, b.TransactionVersion)
	}
	if b.TransactionMaxTimeout < time.Millisecond || b.TransactionAbortCheckInterval < time.Millisecond ||
		b.TransactionalIDExpiration < time.Millisecond || b.TransactionIDExpirationCheckInterval < time.Millisecond {
		return fmt.Errorf("%w: transaction_max_timeout, transactional_id_expiration and the transaction cleanup intervals must be at least 1ms", ErrInvalidConfig)
	}
	if b.ProducerIDExpiration < time.Millisecond || b.ProducerIDExpirationCheckInterval < time.Millisecond {
		return fmt.Errorf("%w: producer_id_expiration and producer_id_expiration_check_interval must be at least 1ms", ErrInvalidConfig)
	}
	if b.TransactionStateLogNumPartitions < 1 || b.TransactionStateLogReplicationFactor < 1 || b.TransactionStateLogMinISR < 1 {
		return fmt.Errorf("%w: transaction_state_log_num_partitions, _replication_factor and _min_isr must be positive", ErrInvalidConfig)
	}
	if b.ConsumerLagSampleInterval < 0 || (b.ConsumerLagSampleInterval > 0 && b.ConsumerLagSampleInterval < 100*time.Millisecond) {
		return fmt.Errorf("%w: consumer_lag_sample_interval %v: want 0 (off) or at least 100ms", ErrInvalidConfig, b.ConsumerLagSampleInterval)
	}
	if b.MaxRequestBytes < 1024 {
		return fmt.Errorf("%w: socket_request_max_bytes %d", ErrInvalidConfig, b.MaxRequestBytes)
	}
	switch b.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("%w: log_format %q", ErrInvalidConfig, b.LogFormat)
	}
	if b.QuotaWindowNum < 2 || b.QuotaWindowSize < time.Millisecond {
		return fmt.Errorf("%w: quota_window_num %d must be at least 2 and quota_window_size %v at least 1ms", ErrInvalidConfig, b.QuotaWindowNum, b.QuotaWindowSize)
	}
	if b.RequestLogSlowThreshold < 0 {
		return fmt.Errorf("%w: request_log_slow_threshold %v is negative", ErrInvalidConfig, b.RequestLogSlowThreshold)
	}
	if b.DiskHighWatermark < 0 || b.DiskHighWatermark > 1 {
		return fmt.Errorf("%w: disk_high_watermark %v: want 0..1", ErrInvalidConfig, b.DiskHighWatermark)
	}
	if b.TieringInterval <= 0 || b.OrphanGrace <= 0 {
		return fmt.Errorf("%w: tiering_interval and remote_orphan_grace must be positive", ErrInvalidConfig)
	}
	if err := b.validateConnections(); err != nil {
		return err
	}
	if err := b.validateAdmin(); err != nil {
		return err
	}
	if (b.S3Endpoint != "") && b.S3Bucket == "" {
		return fmt.Errorf("%w: s3_endpoint without s3_bucket", ErrInvalidConfig)
	}
	if _, set := b.TopicDefaults[RemoteStorageEnable]; !set && b.RemoteStorageEnableDefault {
		if b.TopicDefaults == nil {
			b.TopicDefaults = map[string]string{}
		}
		b.TopicDefaults[RemoteStorageEnable] = "true"
	}
	for k, v := range b.TopicDefaults {
		if err := ValidateTopicValue(k, v); err != nil {
			return fmt.Errorf("topic_defaults: %w", err)
		}
	}
	return nil
}

// AdvertisedHostPort splits Advertise for Metadata responses.
func (b *Broker) AdvertisedHostPort() (string, int32) {
	host, port, _ := net.SplitHostPort(b.Advertise)
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

// LoadFile reads a YAML file over b. Unknown keys are an error.
func (b *Broker) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(b); err != nil {
		return fmt.Errorf("config %s: %w", filepath.Base(path), err)
	}
	return nil
}

// fields walks the settable scalar fields with their YAML names.
func (b *Broker) fields(fn func(name, doc string, v reflect.Value)) {
	rv := reflect.ValueOf(b).Elem()
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || !f.IsExported() || f.Type.Kind() == reflect.Map {
			continue
		}
		fn(name, f.Tag.Get("doc"), rv.Field(i))
	}
}

func setValue(v reflect.Value, s string) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		x, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(x)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			d, err := time.ParseDuration(s)
			if err != nil {
				return err
			}
			v.SetInt(int64(d))
			return nil
		}
		x, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(x)
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(x)
	default:
		return fmt.Errorf("unsupported kind %s", v.Kind())
	}
	return nil
}

// EnvName is the environment variable for a YAML key: listen -> SHALE_LISTEN.
func EnvName(key string) string { return "SHALE_" + strings.ToUpper(key) }

// FlagName is the flag for a YAML key: data_dir -> data-dir.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// ApplyEnv sets fields from SHALE_* variables found by lookup (os.LookupEnv).
func (b *Broker) ApplyEnv(lookup func(string) (string, bool)) error {
	var firstErr error
	b.fields(func(name, _ string, v reflect.Value) {
		if s, ok := lookup(EnvName(name)); ok && firstErr == nil {
			if err := setValue(v, s); err != nil {
				firstErr = fmt.Errorf("%w: %s=%q: %v", ErrInvalidConfig, EnvName(name), s, err)
			}
		}
	})
	return firstErr
}

// FlagSettings are the settings given as flags, recorded while the flags
// are parsed so that Apply can lay them over the file and the environment:
// flags win, whatever order the sources are read in.
type FlagSettings struct {
	scratch       Broker            // each value is checked here when it is parsed
	set           map[string]string // YAML key -> the last value given
	topicDefaults [][2]string       // --topic-default name=value, in order
	listenerName  [][3]string       // --listener-name NAME.key=value, in order
}

// BindFlags registers a flag for every setting on fs (data_dir ->
// --data-dir) and --topic-default. A boolean setting is a bare flag
// (--s3-path-style, or --s3-path-style=false). A value is checked when fs
// parses it (a bad duration is a flag error); call Apply on the broker
// config after LoadFile and ApplyEnv.
func BindFlags(fs *pflag.FlagSet) *FlagSettings {
	s := &FlagSettings{scratch: Defaults(), set: map[string]string{}}
	s.scratch.fields(func(name, doc string, v reflect.Value) {
		usage := fmt.Sprintf("%s (env %s)", doc, EnvName(name))
		sv := &settingValue{name: name, v: v, s: s}
		if v.Kind() == reflect.Bool {
			fs.VarPF(boolSettingValue{sv}, FlagName(name), "", usage).NoOptDefVal = "true"
			return
		}
		f := fs.VarPF(sv, FlagName(name), "", usage)
		if v.IsZero() {
			f.DefValue = "" // no "(default 0s)" in --help
		}
	})
	fs.Var(&topicDefaultValue{s: s}, "topic-default", "a broker-wide topic config default, name=value (repeatable)")
	fs.Var(&listenerNameValue{s: s}, "listener-name", "a per-listener setting, LISTENER.key=value (ssl_client_auth, ssl_certificate_location, ssl_key_location, ssl_ca_location, ssl_principal_mapping_rules; repeatable), Kafka's listener.name.<name>.<key>")
	return s
}

// Apply sets on b every setting that was given as a flag.
func (s *FlagSettings) Apply(b *Broker) error {
	var firstErr error
	b.fields(func(name, _ string, v reflect.Value) {
		if raw, ok := s.set[name]; ok && firstErr == nil {
			if err := setValue(v, raw); err != nil {
				firstErr = fmt.Errorf("%w: --%s=%q: %v", ErrInvalidConfig, FlagName(name), raw, err)
			}
		}
	})
	for _, kv := range s.listenerName {
		if err := b.SetListenerSetting(kv[0], kv[1], kv[2]); err != nil {
			return err
		}
	}
	for _, kv := range s.topicDefaults {
		if b.TopicDefaults == nil {
			b.TopicDefaults = map[string]string{}
		}
		b.TopicDefaults[kv[0]] = kv[1]
	}
	return firstErr
}

// settingValue is the pflag.Value of one setting: Set checks the value on
// the scratch config and records it.
type settingValue struct {
	name string
	v    reflect.Value // the field in s.scratch
	s    *FlagSettings
}

func (sv *settingValue) String() string {
	if !sv.v.IsValid() {
		return ""
	}
	return fmt.Sprint(sv.v.Interface())
}

func (sv *settingValue) Set(raw string) error {
	if err := setValue(sv.v, raw); err != nil {
		return err
	}
	sv.s.set[sv.name] = raw
	return nil
}

// Type names the value in --help: string, bool, int, duration, float.
func (sv *settingValue) Type() string {
	switch {
	case sv.v.Type() == reflect.TypeOf(time.Duration(0)):
		return "duration"
	case sv.v.Kind() == reflect.Float64:
		return "float"
	case sv.v.Kind() == reflect.Bool:
		return "bool"
	case sv.v.Kind() == reflect.String:
		return "string"
	default:
		return "int"
	}
}

// boolSettingValue is a boolean setting: IsBoolFlag makes it a bare flag
// in pflag's help.
type boolSettingValue struct{ *settingValue }

func (boolSettingValue) IsBoolFlag() bool { return true }

type topicDefaultValue struct{ s *FlagSettings }

func (t *topicDefaultValue) String() string { return "" }
func (t *topicDefaultValue) Type() string   { return "name=value" }
func (t *topicDefaultValue) Set(raw string) error {
	k, v, ok := strings.Cut(raw, "=")
	if !ok || k == "" {
		return fmt.Errorf("want name=value")
	}
	t.s.topicDefaults = append(t.s.topicDefaults, [2]string{k, v})
	return nil
}

// Reference writes a Markdown table of every setting, for docs/configuration.md.
func Reference() string {
	var sb strings.Builder
	d := Defaults()
	sb.WriteString("| YAML key | flag | environment | default | meaning |\n|---|---|---|---|---|\n")
	d.fields(func(name, doc string, v reflect.Value) {
		fmt.Fprintf(&sb, "| `%s` | `--%s` | `%s` | `%v` | %s |\n", name, FlagName(name), EnvName(name), v.Interface(), doc)
	})
	sb.WriteString("\nPer-listener settings (Kafka's `listener.name.<name>.<key>`), in YAML under `listener_name` and the listener's name " +
		"(`listener_name: {SASL_SSL: {ssl_client_auth: none}}`), or `--listener-name NAME.key=value` (repeatable; no environment variables). " +
		"Only SSL and SASL_SSL listeners take them; an empty or absent key takes the node-wide setting of the same name:\n\n" +
		"| key | meaning |\n|---|---|\n")
	for _, k := range listenerSettingKeys {
		fmt.Fprintf(&sb, "| `%s` | the listener's own `%s` |\n", k, k)
	}
	sb.WriteString("\nTopic configs (per topic, or broker-wide under `topic_defaults` / `--topic-default name=value`):\n\n| name | type | default | meaning |\n|---|---|---|---|\n")
	for _, k := range TopicKeys {
		fmt.Fprintf(&sb, "| `%s` | %s | `%s` | %s |\n", k.Name, k.Type, k.Default, k.Doc)
	}
	return sb.String()
}

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeShort:
		return "short"
	case TypeLong:
		return "long"
	case TypeDouble:
		return "double"
	case TypeList:
		return "list"
	}
	return "unknown"
}

type listenerNameValue struct{ s *FlagSettings }

func (v *listenerNameValue) String() string { return "" }
func (v *listenerNameValue) Type() string   { return "LISTENER.key=value" }
func (v *listenerNameValue) Set(raw string) error {
	kv, value, ok := strings.Cut(raw, "=")
	name, key, ok2 := strings.Cut(kv, ".")
	if !ok || !ok2 || name == "" {
		return fmt.Errorf("want LISTENER.key=value")
	}
	var scratch Broker
	if err := scratch.SetListenerSetting(name, key, value); err != nil {
		return err
	}
	v.s.listenerName = append(v.s.listenerName, [3]string{name, key, value})
	return nil
}

// RackAwareReplicaSelector is Kafka's rack-aware replica selector, the one
// replica_selector_class Shale builds in (KIP-392).
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
