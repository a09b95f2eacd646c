package config

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
)

// validateInterBroker checks how the node dials and logs in to the others
// through ib, the inter-broker listener, and fills
// SASLMechanismInterBrokerProtocol.
func (b *Broker) validateInterBroker(ib Listener) error {
	if !ib.SASL() {
		return nil
	}
	b.SASLMechanismInterBrokerProtocol = strings.ToUpper(strings.TrimSpace(b.SASLMechanismInterBrokerProtocol))
	enabled := b.SASLMechanisms()
	if b.SASLMechanismInterBrokerProtocol == "" && len(enabled) > 0 {
		b.SASLMechanismInterBrokerProtocol = enabled[0]
	}
	if !slices.Contains(enabled, b.SASLMechanismInterBrokerProtocol) {
		return fmt.Errorf("%w: sasl_mechanism_inter_broker_protocol %s is not in sasl_enabled_mechanisms %s",
			ErrInvalidConfig, b.SASLMechanismInterBrokerProtocol, b.SASLEnabledMechanisms)
	}
	if b.InterBrokerSASLUsername == "" {
		return fmt.Errorf("%w: inter-broker listener %s (%s) needs inter_broker_sasl_username", ErrInvalidConfig, ib.Name, ib.Protocol)
	}
	if (b.InterBrokerSASLPassword == "") == (b.InterBrokerSASLPasswordFile == "") {
		return fmt.Errorf("%w: inter-broker listener %s (%s) needs one of inter_broker_sasl_password and inter_broker_sasl_password_file",
			ErrInvalidConfig, ib.Name, ib.Protocol)
	}
	return nil
}

// InterBrokerListener is the listener other nodes dial (the first of
// ListenerConfigs).
func (b *Broker) InterBrokerListener() Listener {
	if len(b.resolved) == 0 {
		return Listener{Name: ProtocolPlaintext, Protocol: ProtocolPlaintext, Listen: b.Listen, Advertise: b.Advertise}
	}
	return b.resolved[0]
}

// InterBrokerPassword is the password of InterBrokerSASLUsername: the
// setting, or the first line of its file.
func (b *Broker) InterBrokerPassword() (string, error) {
	if b.InterBrokerSASLPasswordFile == "" {
		return b.InterBrokerSASLPassword, nil
	}
	f, err := os.Open(b.InterBrokerSASLPasswordFile)
	if err != nil {
		return "", fmt.Errorf("%w: inter_broker_sasl_password_file: %v", ErrInvalidConfig, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || strings.TrimRight(sc.Text(), "\r") == "" {
		return "", fmt.Errorf("%w: inter_broker_sasl_password_file %s has no password on its first line", ErrInvalidConfig, b.InterBrokerSASLPasswordFile)
	}
	return strings.TrimRight(sc.Text(), "\r"), nil
}

// InterBrokerPrincipal is the principal this node has on the other nodes'
// inter-broker listener: User:<inter_broker_sasl_username> on a SASL
// listener; on SSL the subject of its certificate (certificate-based, so
// "" here); User:ANONYMOUS on PLAINTEXT.
func (b *Broker) InterBrokerPrincipal() string {
	switch ib := b.InterBrokerListener(); {
	case ib.SASL():
		return "User:" + b.InterBrokerSASLUsername
	case ib.TLS():
		return ""
	default:
		return "User:ANONYMOUS"
	}
}
