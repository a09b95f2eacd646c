package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// validateConnections checks the connection settings as Kafka's
// KafkaConfig does.
func (b *Broker) validateConnections() error {
	if b.SASLServerMaxReceiveSize < 8 {
		return fmt.Errorf("%w: sasl_server_max_receive_size %d: want at least 8 (a request header)", ErrInvalidConfig, b.SASLServerMaxReceiveSize)
	}
	if b.TelemetryMaxBytes < 1 {
		return fmt.Errorf("%w: telemetry_max_bytes %d: want at least 1", ErrInvalidConfig, b.TelemetryMaxBytes)
	}
	if b.MaxConnections < 0 || b.MaxConnectionsPerIP < 0 {
		return fmt.Errorf("%w: max_connections %d and max_connections_per_ip %d must not be negative", ErrInvalidConfig, b.MaxConnections, b.MaxConnectionsPerIP)
	}
	if b.ConnectionFailedAuthenticationDelay < 0 {
		return fmt.Errorf("%w: connection_failed_authentication_delay %v is negative", ErrInvalidConfig, b.ConnectionFailedAuthenticationDelay)
	}
	o, err := b.ConnectionsPerIPOverrides()
	if err != nil {
		return err
	}
	if b.MaxConnectionsPerIP == 0 && len(o) == 0 {
		return fmt.Errorf("%w: max_connections_per_ip can be 0 only with max_connections_per_ip_overrides (else no client could connect)", ErrInvalidConfig)
	}
	return nil
}

// ConnectionsPerIPOverrides parses max_connections_per_ip_overrides:
// ip:count pairs, an IPv6 address in brackets ([::1]:10) or bare (the
// count is after the last colon).
func (b *Broker) ConnectionsPerIPOverrides() (map[netip.Addr]int, error) {
	out := map[netip.Addr]int{}
	for _, item := range strings.Split(b.MaxConnectionsPerIPOverrides, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndexByte(item, ':')
		if i < 0 {
			return nil, fmt.Errorf("%w: max_connections_per_ip_overrides %q: want ip:count", ErrInvalidConfig, item)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(item[:i], "["), "]")
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("%w: max_connections_per_ip_overrides %q: %q is not an IP address (host names are not taken)", ErrInvalidConfig, item, host)
		}
		n, err := strconv.Atoi(item[i+1:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: max_connections_per_ip_overrides %q: want a count of 0 or more", ErrInvalidConfig, item)
		}
		addr = addr.Unmap()
		if _, dup := out[addr]; dup {
			return nil, fmt.Errorf("%w: max_connections_per_ip_overrides names %s twice", ErrInvalidConfig, addr)
		}
		out[addr] = n
	}
	return out, nil
}
