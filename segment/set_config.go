package segment

// SetConfig installs new settings (a topic's configs were altered). Size and
// time settings apply from the next append and the next roll; an existing
// segment's preallocated indexes keep their size. Hooks left nil in cfg
// (OnRoll, Decompress, Now, Logger) keep their current values. It takes the
// writer lock, so it waits for an append in progress.
func (l *Log) SetConfig(cfg Config) error {
	l.writer.Lock()
	defer l.writer.Unlock()
	if cfg.OnRoll == nil {
		cfg.OnRoll = l.cfg.OnRoll
	}
	if cfg.Decompress == nil {
		cfg.Decompress = l.cfg.Decompress
	}
	if cfg.Now == nil {
		cfg.Now = l.cfg.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = l.cfg.Logger
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.cfg = cfg
	l.setFlushIdleLocked(false) // flush.ms may be set now
	return nil
}

// Config returns the settings in effect. It takes the writer lock.
func (l *Log) Config() Config {
	l.writer.Lock()
	defer l.writer.Unlock()
	return l.cfg
}
