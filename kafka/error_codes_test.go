package kafka

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorTableRules(t *testing.T) {
	errA := errors.New("a")
	errB := errors.New("b")
	table := NewErrorTable(
		Translation{Err: errA, Kafka: kerr.NotLeaderForPartition},
		Translation{Err: errB, Kafka: kerr.MessageTooLarge},
	)
	for _, c := range []struct {
		name string
		err  error
		want *kerr.Error
	}{
		{"nil", nil, nil},
		{"sentinel", errA, kerr.NotLeaderForPartition},
		{"wrapped sentinel", fmt.Errorf("append: %w", errB), kerr.MessageTooLarge},
		{"two sentinels: the first translation wins", fmt.Errorf("%w: %w", errB, errA), kerr.NotLeaderForPartition},
		{"a sentinel before a kerr error", fmt.Errorf("%w: %w", kerr.InvalidTopicException, errB), kerr.MessageTooLarge},
		{"kerr error", fmt.Errorf("x: %w", kerr.InvalidTopicException), kerr.InvalidTopicException},
		{"deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), kerr.RequestTimedOut},
		{"path error", &fs.PathError{Op: "write", Path: "/d/0.log", Err: syscall.EIO}, kerr.KafkaStorageError},
		{"syscall error", os.NewSyscallError("fsync", syscall.EIO), kerr.KafkaStorageError},
		{"errno", fmt.Errorf("sendfile: %w", syscall.EIO), kerr.KafkaStorageError},
		{"link error", &os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EXDEV}, kerr.KafkaStorageError},
		{"unknown", errors.New("surprise"), kerr.UnknownServerError},
		{"cancelled is unknown", context.Canceled, kerr.UnknownServerError},
	} {
		if got := table.Error(c.err); got != c.want {
			t.Errorf("%s: Error(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
		wantCode := int16(0)
		if c.want != nil {
			wantCode = c.want.Code
		}
		if got := table.Code(c.err); got != wantCode {
			t.Errorf("%s: Code(%v) = %d, want %d", c.name, c.err, got, wantCode)
		}
		if got := table.Retriable(c.err); got != (c.want != nil && c.want.Retriable) {
			t.Errorf("%s: Retriable(%v) = %v", c.name, c.err, got)
		}
	}
	if !table.Unexpected(errors.New("surprise")) || !table.Unexpected(syscall.EIO) || table.Unexpected(errA) || table.Unexpected(nil) {
		t.Error("Unexpected must hold for unknown and storage errors only")
	}
}

func TestErrorTableWith(t *testing.T) {
	errA := errors.New("a")
	errB := errors.New("b")
	base := NewErrorTable(Translation{Err: errA, Kafka: kerr.NotLeaderForPartition})
	ext := base.With(Translation{Err: errB, Kafka: kerr.NotCoordinator})
	both := fmt.Errorf("%w: %w", errA, errB)
	if got := ext.Error(both); got != kerr.NotCoordinator {
		t.Errorf("extension: %v, want its own translation first", got)
	}
	if got := base.Error(both); got != kerr.NotLeaderForPartition {
		t.Errorf("base after With: %v, want it unchanged", got)
	}
	if len(base.Translations()) != 1 || len(ext.Translations()) != 2 {
		t.Errorf("translations: base %d, extension %d", len(base.Translations()), len(ext.Translations()))
	}
}

func TestErrorTableRejectsMisuse(t *testing.T) {
	errA := errors.New("a")
	for name, build := range map[string]func(){
		"nil error": func() { NewErrorTable(Translation{Kafka: kerr.NotLeaderForPartition}) },
		"nil kafka": func() { NewErrorTable(Translation{Err: errA}) },
		"twice": func() {
			NewErrorTable(Translation{errA, kerr.NotLeaderForPartition}, Translation{errA, kerr.NotCoordinator})
		},
		"twice with": func() {
			NewErrorTable(Translation{errA, kerr.NotLeaderForPartition}).With(Translation{errA, kerr.NotCoordinator})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			build()
		}()
	}
}
