package invariants

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	Check(true, "never")
	defer func() {
		v := recover()
		if !Enabled {
			if v != nil {
				t.Fatalf("Check panicked without the build tag: %v", v)
			}
			return
		}
		if s, _ := v.(string); !strings.Contains(s, "invariant broken: hw 5 past 3") {
			t.Fatalf("Check(false) panicked with %v", v)
		}
	}()
	Check(false, "hw %d past %d", 5, 3)
	if Enabled {
		t.Fatal("Check(false) returned")
	}
}
