package quota

import "time"

// Config is Kafka's quota.window.num and quota.window.size.seconds.
type Config struct {
	// Samples is how many windows a rate is measured over
	// (quota.window.num, default 11).
	Samples int `yaml:"quota_window_num"`
	// Window is one window's span (quota.window.size.seconds, default 1s).
	Window time.Duration `yaml:"quota_window_size"`
	// OnThrottle, when set, is told of every throttle the manager hands
	// out, by quota type (metrics). It must be quick and safe for
	// concurrent use.
	OnThrottle func(t Type, d time.Duration) `yaml:"-"`
}

// Defaults returns c with zero fields set to Kafka's defaults.
func (c Config) Defaults() Config {
	if c.Samples == 0 {
		c.Samples = 11
	}
	if c.Window == 0 {
		c.Window = time.Second
	}
	return c
}

// Validate reports a configuration no rate can be measured with.
func (c Config) Validate() error {
	if c.Samples < 2 {
		return errorf("quota_window_num %d is below 2", c.Samples)
	}
	if c.Window < time.Millisecond {
		return errorf("quota_window_size %v is below 1ms", c.Window)
	}
	return nil
}

// rate is Kafka's Rate over a SampledStat: the sum recorded in the last
// Samples windows over the time they span. A window starts at the first
// record after the previous one ended; windows older than Samples*Window
// are forgotten. The span is at least Samples-1 whole windows, so that a
// burst on a fresh rate is measured over 10 s and not over its own
// instant (Kafka's Rate.windowSize). Not safe for concurrent use.
type rate struct {
	samples []sample
	current int
}

type sample struct {
	start time.Time // zero: unused
	sum   float64
}

func newRate(cfg Config) *rate {
	return &rate{samples: make([]sample, cfg.Samples)}
}

// record adds v at now.
func (r *rate) record(cfg Config, v float64, now time.Time) {
	s := &r.samples[r.current]
	if s.start.IsZero() {
		s.start = now
	} else if now.Sub(s.start) >= cfg.Window {
		r.current = (r.current + 1) % len(r.samples)
		s = &r.samples[r.current]
		*s = sample{start: now}
	}
	s.sum += v
}

// purge forgets the windows that started Samples*Window or more before now.
func (r *rate) purge(cfg Config, now time.Time) {
	expire := time.Duration(len(r.samples)) * cfg.Window
	for i := range r.samples {
		if s := &r.samples[i]; !s.start.IsZero() && now.Sub(s.start) >= expire {
			*s = sample{}
		}
	}
}

// windowSize is the span the rate divides by at now (after purge).
func (r *rate) windowSize(cfg Config, now time.Time) time.Duration {
	oldest := now
	for _, s := range r.samples {
		if !s.start.IsZero() && s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	full := int(elapsed / cfg.Window)
	if minFull := len(r.samples) - 1; full < minFull {
		elapsed += time.Duration(minFull-full) * cfg.Window
	}
	return elapsed
}

// measure returns the rate per second at now, and the span it was
// measured over.
func (r *rate) measure(cfg Config, now time.Time) (perSecond float64, span time.Duration) {
	r.purge(cfg, now)
	sum := 0.0
	for _, s := range r.samples {
		sum += s.sum
	}
	span = r.windowSize(cfg, now)
	return sum / span.Seconds(), span
}

// lastRecord is when the rate last started a window, for expiry.
func (r *rate) lastStart() time.Time { return r.samples[r.current].start }

// throttleTime is Kafka's QuotaUtils.throttleTime: how long a client whose
// rate is observed over bound must record nothing for the rate, measured
// over span, to come back to bound: (observed-bound)/bound * span.
func throttleTime(observed, bound float64, span time.Duration) time.Duration {
	if observed <= bound || bound <= 0 {
		return 0
	}
	return time.Duration((observed - bound) / bound * float64(span)).Round(time.Millisecond)
}
