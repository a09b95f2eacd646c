package quota

import (
	"fmt"
	"math"
)

// Type is one kind of quota, Kafka's ClientQuotaType; each is measured and
// enforced on its own.
type Type int

const (
	// Produce is producer_byte_rate: bytes per second of produce requests.
	Produce Type = iota
	// Fetch is consumer_byte_rate: bytes per second of fetch responses to
	// consumers (a follower's fetches are not counted).
	Fetch
	// Request is request_percentage: the percentage of one request handler
	// that the client's requests may take, measured as handler time per
	// second (KIP-124): 200 is two handlers' worth.
	Request
	// RemoteFetch is shale.remote_fetch_byte_rate, Shale's own: bytes per
	// second a principal may read from remote (tiered) segments, so that
	// one tenant replaying history cannot take the cold tier from others.
	RemoteFetch
	numTypes
)

// Kafka's configuration keys of the quota types.
const (
	KeyProducerByteRate    = "producer_byte_rate"
	KeyConsumerByteRate    = "consumer_byte_rate"
	KeyRequestPercentage   = "request_percentage"
	KeyRemoteFetchByteRate = "shale.remote_fetch_byte_rate"
)

var typeKeys = [numTypes]string{
	Produce:     KeyProducerByteRate,
	Fetch:       KeyConsumerByteRate,
	Request:     KeyRequestPercentage,
	RemoteFetch: KeyRemoteFetchByteRate,
}

// Key is t's configuration key.
func (t Type) Key() string {
	if t < 0 || t >= numTypes {
		return fmt.Sprintf("quota.Type(%d)", int(t))
	}
	return typeKeys[t]
}

func (t Type) String() string { return t.Key() }

// Name is Kafka's name of t's quota manager (QuotaType): Produce, Fetch,
// Request, and Shale's RemoteFetch.
func (t Type) Name() string {
	switch t {
	case Produce:
		return "Produce"
	case Fetch:
		return "Fetch"
	case Request:
		return "Request"
	case RemoteFetch:
		return "RemoteFetch"
	}
	return t.Key()
}

// TypeForKey returns the quota type of a configuration key.
func TypeForKey(key string) (Type, bool) {
	for t, k := range typeKeys {
		if k == key {
			return Type(t), true
		}
	}
	return 0, false
}

// Keys lists the configuration keys, in Type order.
func Keys() []string { return append([]string(nil), typeKeys[:]...) }

// ValidateValue reports why value cannot be the quota of key: an unknown
// key, a value that is not a positive finite number, or a byte rate that is
// not a whole number (Kafka's byte rates are longs).
func ValidateValue(key string, value float64) error {
	t, ok := TypeForKey(key)
	if !ok {
		return fmt.Errorf("%w: unknown quota key %q", ErrInvalid, key)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) || value <= 0 {
		return fmt.Errorf("%w: %s must be a positive number, not %v", ErrInvalid, key, value)
	}
	if t != Request && value != math.Trunc(value) {
		return fmt.Errorf("%w: %s must be a whole number of bytes per second, not %v", ErrInvalid, key, value)
	}
	return nil
}
