package chaos

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// recorder collects a run's history from the workload goroutines.
type recorder struct {
	start time.Time
	out   io.Writer // progress lines; nil discards

	logMu sync.Mutex

	mu      sync.Mutex
	h       History
	actors  map[string]*Actor
	healEnd time.Duration // 0 until the heal ended
	// samples per second since start, for the timeline
	acksPerSec   []int
	latencyPerS  [][]time.Duration
	errorsPerSec []int
}

func newRecorder(out io.Writer) *recorder {
	return &recorder{start: time.Now(), out: out, actors: map[string]*Actor{}}
}

// logf prints one progress line, stamped with the run's clock.
func (r *recorder) logf(format string, args ...any) {
	if r.out == nil {
		return
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.out, "%7.1fs %s\n", r.since().Seconds(), fmt.Sprintf(format, args...))
}

func (r *recorder) since() time.Duration { return time.Since(r.start) }

// actor registers an actor whose progress counts for STUCK.
func (r *recorder) actor(name, kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actors[name] = &Actor{Name: name, Kind: kind}
}

// progress notes that actor made progress now.
// REQUIRES: r.mu held.
func (r *recorder) progressLocked(name string, at time.Duration) {
	a := r.actors[name]
	if a != nil && r.healEnd > 0 && a.ResumedAt == 0 && at >= r.healEnd {
		a.ResumedAt = at
	}
}

// progress notes that actor made progress at at.
func (r *recorder) progress(name string, at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progressLocked(name, at)
}

func (r *recorder) ack(a Ack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Acks = append(r.h.Acks, a)
	sec := int(a.At / time.Second)
	for len(r.acksPerSec) <= sec {
		r.acksPerSec = append(r.acksPerSec, 0)
		r.latencyPerS = append(r.latencyPerS, nil)
		r.errorsPerSec = append(r.errorsPerSec, 0)
	}
	r.acksPerSec[sec]++
	r.latencyPerS[sec] = append(r.latencyPerS[sec], a.Latency)
	r.progressLocked(a.Producer, a.At)
}

func (r *recorder) produceError(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sec := int(at / time.Second)
	for len(r.errorsPerSec) <= sec {
		r.acksPerSec = append(r.acksPerSec, 0)
		r.latencyPerS = append(r.latencyPerS, nil)
		r.errorsPerSec = append(r.errorsPerSec, 0)
	}
	r.errorsPerSec[sec]++
}

func (r *recorder) reads(consumer string, rs []Read) {
	if len(rs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Reads = append(r.h.Reads, rs...)
	r.progressLocked(consumer, rs[len(rs)-1].At)
}

func (r *recorder) commit(c Commit, actor string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Commit = append(r.h.Commit, c)
	if actor != "" {
		r.progressLocked(actor, c.At)
	}
}

func (r *recorder) trim(t Trim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Trims = append(r.h.Trims, t)
}

// healed marks the end of the heal.
func (r *recorder) healed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.healEnd = r.since()
	r.h.HealEnd = r.healEnd
}

// history returns the history so far (actors included); the caller adds
// the final reads, replicas and bucket.
func (r *recorder) history() *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.h
	h.Actors = nil
	for _, a := range r.actors {
		h.Actors = append(h.Actors, *a)
	}
	return &h
}
