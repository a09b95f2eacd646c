package loadbench

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Field 2 holds spaces and a ')' to check that counting starts after the last one.
	stat := "1234 (my )prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 99 1000 200 18446744073709551615"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("got %v, want %v (250+75 ticks)", got, want)
	}
	if _, err := parseStatCPU("1234 (x) S 1 2"); err == nil {
		t.Fatal("short stat accepted")
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Fatal("stat without ')' accepted")
	}
}

func TestProcCPUSelf(t *testing.T) {
	// Burn a little CPU so that at least one tick is charged to this process.
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := procCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if got > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no CPU time charged to this process after 5 s of spinning")
		}
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
	}
}
