package ovsdbsync

// Remembered is how many owners' contributions the Syncer remembers (for
// tests: an owner that went must be forgotten).
func (s *Syncer) Remembered() int { return s.memory.remembered() }
