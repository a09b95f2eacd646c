package tlsreload

import (
	"errors"
	"testing"
)

func TestNewRefusesBadSettings(t *testing.T) {
	for _, f := range []Files{
		{},
		{CertFile: "a", KeyFile: "b", ClientAuth: "sometimes"},
		{CertFile: "a", KeyFile: "b", ClientAuth: ClientAuthRequired},
		{CertFile: "/nonexistent/a", KeyFile: "/nonexistent/b"},
	} {
		if _, err := New(f, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err %v, want ErrConfig", f, err)
		}
	}
}
