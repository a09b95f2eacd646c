package natsembed

import (
	"fmt"
	"log/slog"
)

// slogAdapter implements the NATS server's Logger on top of slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) { a.l.Info(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }

// Fatalf logs at Error: the embedded server must never exit the process.
func (a slogAdapter) Fatalf(format string, v ...any) {
	a.l.Error(fmt.Sprintf(format, v...), "fatal", true)
}
func (a slogAdapter) Errorf(format string, v ...any) { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }

// Tracef drops protocol traces; tracing is never enabled on the server.
func (a slogAdapter) Tracef(string, ...any) {}
