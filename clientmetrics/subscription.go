// Package clientmetrics holds KIP-714's client metrics subscriptions as
// values: the configs of a CLIENT_METRICS resource (metrics, interval.ms,
// match) parsed and validated with Kafka's rules, the matching of a client
// against a subscription's selectors, and the combination of the
// subscriptions a client matches into what GetTelemetrySubscriptions
// answers. It is pure: the control plane stores the configs, package admin
// validates them with Parse before they are written, and package telemetry
// serves the clients from them.
package clientmetrics

import (
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Kafka's names of a CLIENT_METRICS resource's configs
// (ClientMetricsConfigs).
const (
	ConfigMetrics  = "metrics"
	ConfigInterval = "interval.ms"
	ConfigMatch    = "match"
)

// The selectors a "match" entry may name, Kafka's client metadata keys.
const (
	MatchClientInstanceID      = "client_instance_id"
	MatchClientID              = "client_id"
	MatchClientSoftwareName    = "client_software_name"
	MatchClientSoftwareVersion = "client_software_version"
	MatchClientSourceAddress   = "client_source_address"
	MatchClientSourcePort      = "client_source_port"
)

// AllMetrics in a subscription's metrics subscribes a client to every
// metric.
const AllMetrics = "*"

// DefaultInterval is Kafka's interval.ms default (5 minutes), and the push
// interval answered to a client that matches no subscription.
const DefaultInterval = 5 * 60 * 1000

// Kafka's bounds of interval.ms (100 ms to one hour).
const (
	minInterval = 100
	maxInterval = 3600000
)

// Errors of Parse, for the protocol edge: ErrInvalidRequest is Kafka's
// INVALID_REQUEST (an unknown config, an interval out of range, an empty
// name), ErrInvalidConfig its INVALID_CONFIG (a malformed match entry).
var (
	ErrInvalidRequest = errors.New("clientmetrics: invalid request")
	ErrInvalidConfig  = errors.New("clientmetrics: invalid config")
)

// Names are the configs a CLIENT_METRICS resource has, sorted.
var Names = []string{ConfigInterval, ConfigMatch, ConfigMetrics}

// Defaults are their defaults as DescribeConfigs shows them.
var Defaults = map[string]string{ConfigMetrics: "", ConfigInterval: strconv.Itoa(DefaultInterval), ConfigMatch: ""}

// Subscription is one CLIENT_METRICS resource, parsed.
type Subscription struct {
	Name string
	// Metrics are the metric name prefixes subscribed; AllMetrics for all.
	Metrics []string
	// IntervalMs is how often a matching client pushes.
	IntervalMs int32
	// Match are the selectors, by client metadata key: a client matches
	// when every selector's pattern matches the whole of its value. No
	// selector matches every client.
	Match map[string]*regexp.Regexp
}

// Parse validates and parses a CLIENT_METRICS resource's configs as Kafka
// does (ClientMetricsConfigs.validate): only the three configs, interval.ms
// an integer in 100..3600000, match entries "key=regex" with a known key
// and a valid expression. Errors wrap ErrInvalidRequest or ErrInvalidConfig.
func Parse(name string, configs map[string]string) (Subscription, error) {
	s := Subscription{Name: name, IntervalMs: DefaultInterval}
	if name == "" {
		return s, fmt.Errorf("%w: subscription name can't be empty", ErrInvalidRequest)
	}
	for k := range configs {
		if !slices.Contains(Names, k) {
			return s, fmt.Errorf("%w: unknown client metrics configuration: %s", ErrInvalidRequest, k)
		}
	}
	s.Metrics = splitList(configs[ConfigMetrics])
	if v, ok := configs[ConfigInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return s, fmt.Errorf("%w: invalid value %q for %s: not an integer", ErrInvalidConfig, v, ConfigInterval)
		}
		if n < minInterval || n > maxInterval {
			return s, fmt.Errorf("%w: invalid value %d for %s, interval must be between 100 and 3600000 (1 hour)", ErrInvalidRequest, n, ConfigInterval)
		}
		s.IntervalMs = int32(n)
	}
	for _, p := range splitList(configs[ConfigMatch]) {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.Contains(v, "=") {
			return s, fmt.Errorf("%w: illegal client matching pattern: %s", ErrInvalidConfig, p)
		}
		k = strings.TrimSpace(k)
		if !slices.Contains([]string{MatchClientInstanceID, MatchClientID, MatchClientSoftwareName,
			MatchClientSoftwareVersion, MatchClientSourceAddress, MatchClientSourcePort}, k) {
			return s, fmt.Errorf("%w: illegal client matching pattern: %s", ErrInvalidConfig, p)
		}
		re, err := regexp.Compile("^(?:" + strings.TrimSpace(v) + ")$")
		if err != nil {
			return s, fmt.Errorf("%w: illegal client matching pattern: %s", ErrInvalidConfig, p)
		}
		if s.Match == nil {
			s.Match = map[string]*regexp.Regexp{}
		}
		s.Match[k] = re
	}
	return s, nil
}

// splitList splits a Kafka LIST config: comma separated, items trimmed,
// empty items dropped.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Client is what a subscription's selectors are matched against, by
// the match keys above.
type Client map[string]string

// Matches reports whether c matches every selector of s.
func (s Subscription) Matches(c Client) bool {
	for k, re := range s.Match {
		if !re.MatchString(c[k]) {
			return false
		}
	}
	return true
}

// Combined is what the subscriptions a client matches add up to.
type Combined struct {
	// Metrics are the prefixes, sorted and without duplicates: just
	// AllMetrics when one subscription names it, none when no subscription
	// matches.
	Metrics []string
	// IntervalMs is the smallest interval of the matching subscriptions,
	// DefaultInterval when none matches.
	IntervalMs int32
}

// Combine adds up the subscriptions that c matches, as Kafka's
// ClientMetricsManager does.
func Combine(subs []Subscription, c Client) Combined {
	out := Combined{IntervalMs: DefaultInterval}
	all := false
	for _, s := range subs {
		if !s.Matches(c) {
			continue
		}
		all = all || slices.Contains(s.Metrics, AllMetrics)
		out.Metrics = append(out.Metrics, s.Metrics...)
		out.IntervalMs = min(out.IntervalMs, s.IntervalMs)
	}
	if all {
		out.Metrics = []string{AllMetrics}
	}
	slices.Sort(out.Metrics)
	out.Metrics = slices.Compact(out.Metrics)
	return out
}

// SubscriptionID is Kafka's subscription id of a client's combined
// subscription: the CRC32C of the metrics (as Java prints a set) and the
// interval, XORed with the hash of the client instance id.
func (c Combined) SubscriptionID(clientInstanceID [16]byte) int32 {
	s := "[" + strings.Join(c.Metrics, ", ") + "]" + strconv.Itoa(int(c.IntervalMs))
	crc := int32(crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli)))
	return crc ^ uuidHash(clientInstanceID)
}

// uuidHash is Java's Uuid.hashCode.
func uuidHash(id [16]byte) int32 {
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(id[i])
		lo = lo<<8 | uint64(id[8+i])
	}
	h := hi ^ lo
	return int32(h>>32) ^ int32(uint32(h))
}
