package sdk

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// slogLogger adapts slog to kgo's logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Level() kgo.LogLevel {
	switch {
	case s.l.Enabled(context.Background(), slog.LevelDebug):
		return kgo.LogLevelDebug
	case s.l.Enabled(context.Background(), slog.LevelInfo):
		return kgo.LogLevelInfo
	case s.l.Enabled(context.Background(), slog.LevelWarn):
		return kgo.LogLevelWarn
	default:
		return kgo.LogLevelError
	}
}

func (s slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelError
	switch level {
	case kgo.LogLevelDebug:
		lv = slog.LevelDebug
	case kgo.LogLevelInfo:
		lv = slog.LevelInfo
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	}
	s.l.Log(context.Background(), lv, msg, keyvals...)
}
