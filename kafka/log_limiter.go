package kafka

import "time"

// LogLimiter is the rate limit of the slow-request and failed-handshake
// logs (at most five lines in each one-second window), for other packages'
// logs of the same kind, such as the authorizer's denials. The zero value
// is ready; it is safe for concurrent use.
type LogLimiter struct{ l slowLog }

// Allow reports whether a line at now may be logged and, when it may, how
// many lines were held back since the last one logged (and resets that
// count).
func (l *LogLimiter) Allow(now time.Time) (ok bool, suppressed int64) { return l.l.allow(now) }
