package kafka

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Translation says which Kafka error a client gets for one of Shale's
// errors: any error for which errors.Is(err, Err) holds.
type Translation struct {
	Err error
	// Kafka is the error as franz-go's kerr lists it: its code, its name
	// and whether Kafka's clients retry it.
	Kafka *kerr.Error
}

// ErrorTable translates errors to Kafka error codes at the protocol edge.
// Below the edge errors are values with meaning (sentinels wrapped with
// %w); the handlers translate them only when they fill a response.
//
// An error translates to, in this order:
//
//   - nil: 0, no error;
//   - the Kafka error of the first Translation whose Err it matches
//     (errors.Is), in the order the table was built;
//   - a *kerr.Error in its chain (errors.As): that error;
//   - context.DeadlineExceeded: REQUEST_TIMED_OUT (retriable);
//   - an I/O error of the operating system (*fs.PathError, *os.LinkError,
//     *os.SyscallError, syscall.Errno): KAFKA_STORAGE_ERROR (retriable; the
//     client looks for the leader again), as Kafka answers an IOException;
//   - anything else: UNKNOWN_SERVER_ERROR (not retriable), as Kafka answers
//     an exception it has no code for. The handler logs those.
//
// An ErrorTable is immutable and safe for concurrent use.
type ErrorTable struct {
	entries []Translation
}

// NewErrorTable returns a table of the translations in order. It panics,
// as a broken program invariant, on a nil Err or Kafka, or an Err listed
// twice.
func NewErrorTable(ts ...Translation) *ErrorTable {
	return (&ErrorTable{}).With(ts...)
}

// With returns a table that tries ts first, then t's translations: a
// package with errors of its own (the group coordinator's NOT_COORDINATOR)
// extends the node's table with them. t is not modified.
func (t *ErrorTable) With(ts ...Translation) *ErrorTable {
	out := &ErrorTable{entries: make([]Translation, 0, len(ts)+len(t.entries))}
	seen := map[error]bool{}
	for _, e := range append(append([]Translation(nil), ts...), t.entries...) {
		switch {
		case e.Err == nil || e.Kafka == nil:
			panic(fmt.Sprintf("kafka: ErrorTable: incomplete translation %v -> %v", e.Err, e.Kafka))
		case seen[e.Err]:
			panic(fmt.Sprintf("kafka: ErrorTable: %v translated twice", e.Err))
		}
		seen[e.Err] = true
		out.entries = append(out.entries, e)
	}
	return out
}

// Error returns the Kafka error for err, nil for a nil err.
func (t *ErrorTable) Error(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	for _, e := range t.entries {
		if errors.Is(err, e.Err) {
			return e.Kafka
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut
	}
	if isIOError(err) {
		return kerr.KafkaStorageError
	}
	return kerr.UnknownServerError
}

// Code returns the Kafka error code for err, 0 for a nil err.
func (t *ErrorTable) Code(err error) int16 {
	if ke := t.Error(err); ke != nil {
		return ke.Code
	}
	return 0
}

// Retriable reports whether Kafka's clients retry err's Kafka error. A nil
// err is not retriable.
func (t *ErrorTable) Retriable(err error) bool {
	ke := t.Error(err)
	return ke != nil && ke.Retriable
}

// Unexpected reports whether err translates to UNKNOWN_SERVER_ERROR or
// KAFKA_STORAGE_ERROR: a failure of Shale or of its disks and bucket rather
// than of the client's request, which the handler logs.
func (t *ErrorTable) Unexpected(err error) bool {
	ke := t.Error(err)
	return ke == kerr.UnknownServerError || ke == kerr.KafkaStorageError
}

// Translations returns the table's translations in order. The caller must
// not modify the returned slice.
func (t *ErrorTable) Translations() []Translation {
	return t.entries
}

func isIOError(err error) bool {
	var (
		pe *fs.PathError
		le *os.LinkError
		se *os.SyscallError
		en syscall.Errno
	)
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &en)
}
