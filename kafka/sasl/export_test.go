package sasl

import "time"

// SetJWKSClock replaces s's clock (refresh and backoff decisions).
func SetJWKSClock(s *JWKSource, now func() time.Time) { s.now = now }
