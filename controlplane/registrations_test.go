package controlplane

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestRegistrationOutlivesSession: a broker whose session ends (here a
// clean DeregisterBroker; a dead process's key expires or is removed by
// the liveness probe the same way) leaves the live broker list but stays
// registered, fenced, with its endpoints and epoch, as in Kafka. A
// reassignment or manual assignment may name it; an id that never
// registered is refused (INVALID_REPLICA_ASSIGNMENT). A new partition
// placed on it by hand leaves it out of the ISR, and one placed on fenced
// brokers only is refused. Registering again unfences it with a new
// epoch; UnregisterBroker refuses a live broker and an unknown id, and
// removes a fenced one for good.
func TestRegistrationOutlivesSession(t *testing.T) {
	ns := startNATS(t)
	s := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	if err := s.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, connect(t, ns), StoreConfig{})
	b2 := broker(2)
	b2.Rack = "r2"
	if err := other.RegisterBroker(ctx, b2); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "both brokers", func() bool { return len(s.Brokers()) == 2 })
	eventually(t, 10*time.Second, "both registered", func() bool {
		rs := s.Registrations()
		return len(rs) == 2 && rs[1].Epoch > 0
	})
	epoch := s.Registrations()[1].Epoch
	if err := s.UnregisterBroker(ctx, 2); !errors.Is(err, ErrBrokerNotFenced) {
		t.Fatalf("unregistering live broker 2: %v, want ErrBrokerNotFenced", err)
	}

	if err := other.DeregisterBroker(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "broker 2 fenced", func() bool { return len(s.Brokers()) == 1 })
	want := []Registration{
		{Broker: broker(1), Incarnation: s.incarnation, Epoch: s.Registrations()[0].Epoch},
		{Broker: b2, Incarnation: other.incarnation, Epoch: epoch, Fenced: true},
	}
	if got := s.Registrations(); !slices.Equal(got, want) {
		t.Fatalf("Registrations() = %+v, want %+v", got, want)
	}
	if !s.Registered(2) || s.Live(2) || s.Registered(3) {
		t.Fatalf("Registered(2) %v Live(2) %v Registered(3) %v; want true false false", s.Registered(2), s.Live(2), s.Registered(3))
	}
	if err := ValidateReplicaAssignment([]int32{2, 1}, s.Registered); err != nil {
		t.Fatalf("reassignment onto fenced broker 2: %v", err)
	}
	if err := ValidateReplicaAssignment([]int32{3, 1}, s.Registered); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("reassignment onto never registered broker 3: %v, want ErrInvalidReplicaAssignment", err)
	}
	if _, err := s.CreateTopicWithAssignment(ctx, "fenced-only", [][]int32{{2}}, nil); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("a partition on fenced brokers only: %v, want ErrInvalidReplicaAssignment", err)
	}
	if _, err := s.CreateTopicWithAssignment(ctx, "unknown", [][]int32{{1, 3}}, nil); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("a partition on never registered broker 3: %v, want ErrInvalidReplicaAssignment", err)
	}
	if _, err := s.CreateTopicWithAssignment(ctx, "with-fenced", [][]int32{{2, 1}}, nil); err != nil {
		t.Fatalf("a partition on fenced 2 and live 1: %v", err)
	}
	if st, _ := s.Partition("with-fenced", 0); st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) || !slices.Equal(st.Replicas, []int32{2, 1}) {
		t.Fatalf("with-fenced-0: %s; want replicas [2 1], leader 1, ISR [1]", stateString(st))
	}
	if err := s.CreatePartitionsWithAssignment(ctx, "with-fenced", 2, [][]int32{{3, 1}}); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("a new partition on never registered broker 3: %v, want ErrInvalidReplicaAssignment", err)
	}
	if err := s.CreatePartitionsWithAssignment(ctx, "with-fenced", 2, [][]int32{{2, 1}}); err != nil {
		t.Fatalf("a new partition on fenced 2 and live 1: %v", err)
	}
	if st, _ := s.Partition("with-fenced", 1); st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) || !slices.Equal(st.Replicas, []int32{2, 1}) {
		t.Fatalf("with-fenced-1: %s; want replicas [2 1], leader 1, ISR [1]", stateString(st))
	}

	// A restarted broker (a new process) registers again: a new epoch.
	again := openStore(t, connect(t, ns), StoreConfig{})
	if err := again.RegisterBroker(ctx, b2); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "broker 2 unfenced", func() bool {
		rs := s.Registrations()
		return len(rs) == 2 && !rs[1].Fenced && rs[1].Epoch > epoch && rs[1].Incarnation == again.incarnation
	})
	if err := again.DeregisterBroker(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "broker 2 fenced again", func() bool { return !s.Live(2) })

	if err := s.UnregisterBroker(ctx, 3); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Fatalf("unregistering unknown broker 3: %v, want ErrBrokerNotRegistered", err)
	}
	if err := s.UnregisterBroker(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if s.Registered(2) || len(s.Registrations()) != 1 {
		t.Fatalf("after unregistering 2: Registered(2) %v, %+v", s.Registered(2), s.Registrations())
	}
	eventually(t, 10*time.Second, "another store sees the unregistration", func() bool { return !other.Registered(2) })
	if err := ValidateReplicaAssignment([]int32{2, 1}, s.Registered); !errors.Is(err, ErrInvalidReplicaAssignment) {
		t.Fatalf("reassignment onto unregistered broker 2: %v, want ErrInvalidReplicaAssignment", err)
	}
	if err := s.UnregisterBroker(ctx, 2); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Fatalf("unregistering broker 2 twice: %v, want ErrBrokerNotRegistered", err)
	}
}

// TestRegistrationWrittenAgainAfterRacingUnregister: a live broker whose
// registration record disappears (an UnregisterBroker that raced with the
// process's start) writes it again at its next keepalive, as a Kafka
// broker registers again after being unregistered.
func TestRegistrationWrittenAgainAfterRacingUnregister(t *testing.T) {
	ns := startNATS(t)
	s := openStore(t, connect(t, ns), StoreConfig{BrokerTTL: 2 * time.Second})
	ctx := testCtx(t)
	if err := s.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	rev := s.mu.c.registrations[1].rev
	s.mu.RUnlock()
	if _, err := kvDelete(ctx, s.js, BucketBrokerRegistrations, brokerKey(1), rev); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the registration written again", func() bool {
		s.mu.RLock()
		defer s.mu.RUnlock()
		e := s.mu.c.registrations[1]
		return e != nil && !e.deleted && e.rev > rev
	})
}
