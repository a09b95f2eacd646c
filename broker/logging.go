package broker

import (
	"context"
	"log/slog"
)

// minLevel wraps a handler to drop records below min: the embedded NATS
// server's notices are noise in a node's log unless debugging.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// natsLogger is the node's logger for the embedded NATS server: warnings and
// errors only, unless the node logs at debug level.
func natsLogger(l *slog.Logger) *slog.Logger {
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l.With("component", "nats")
	}
	return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("component", "nats")
}
