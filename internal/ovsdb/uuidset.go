package ovsdb

// uuidSet is a set of row UUIDs that holds its first member inline and
// makes a map only for a second: most names index one row, and a Go map of
// one string costs about 250 bytes where this costs none beyond the slot.
// Its zero value is empty.
type uuidSet struct {
	one  string
	more map[string]struct{}
}

// add puts uuid in s.
func (s *uuidSet) add(uuid string) {
	switch {
	case s.one == "" || s.one == uuid:
		s.one = uuid
	default:
		if s.more == nil {
			s.more = map[string]struct{}{}
		}
		s.more[uuid] = struct{}{}
	}
}

// remove takes uuid out of s, moving a member of more inline when the
// inline one goes.
func (s *uuidSet) remove(uuid string) {
	if s.one != uuid {
		delete(s.more, uuid)
	} else {
		s.one = ""
		for u := range s.more {
			s.one = u
			delete(s.more, u)
			break
		}
	}
	if len(s.more) == 0 {
		s.more = nil
	}
}

// empty reports whether s has no member.
func (s *uuidSet) empty() bool { return s.one == "" }

// each calls f with every member.
func (s *uuidSet) each(f func(uuid string)) {
	if s.one == "" {
		return
	}
	f(s.one)
	for u := range s.more {
		f(u)
	}
}
