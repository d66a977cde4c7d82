package signin

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// clock is a test clock moved by hand: expiry is tested without waiting.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newStore(c *clock, idle, maxAge time.Duration) *Store {
	return New(Options{Idle: func() time.Duration { return idle }, MaxAge: func() time.Duration { return maxAge }, Now: c.now})
}

func TestIDsAreOpaqueAndRandom(t *testing.T) {
	s := newStore(&clock{t: time.Unix(1e9, 0)}, time.Hour, 12*time.Hour)
	seen := map[string]bool{}
	for range 100 {
		id, sess := s.Create("subject-hash")
		if len(id) != 43 || strings.Contains(id, "subject") {
			t.Fatalf("id %q: want 43 characters of base64 of 32 random bytes", id)
		}
		if seen[id] {
			t.Fatalf("id %q twice", id)
		}
		seen[id] = true
		if sess.Subject != "subject-hash" {
			t.Fatalf("subject %q", sess.Subject)
		}
	}
	for k := range s.live {
		if seen[string(k[:])] {
			t.Fatal("the store keeps an id itself, not its hash")
		}
	}
}

func TestIdleAndAbsoluteExpiry(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := newStore(c, time.Hour, 3*time.Hour)
	id, sess := s.Create("a")
	if !sess.Expires.Equal(c.t.Add(3 * time.Hour)) {
		t.Fatalf("expires %v", sess.Expires)
	}
	// Used every 50 minutes it lives, until its absolute age.
	for range 3 {
		c.t = c.t.Add(50 * time.Minute)
		if _, ok := s.Lookup(id); !ok {
			t.Fatalf("refused at %v though used within the idle time", c.t)
		}
	}
	c.t = c.t.Add(30 * time.Minute) // 3 h 20 min after sign-in
	if _, ok := s.Lookup(id); ok {
		t.Fatal("a sign-in past its absolute age still works")
	}
	select {
	case <-sess.Ended:
	default:
		t.Fatal("Ended not closed at expiry")
	}

	idle, _ := s.Create("a")
	c.t = c.t.Add(59 * time.Minute)
	if _, ok := s.Peek(idle); !ok {
		t.Fatal("refused within the idle time")
	}
	c.t = c.t.Add(time.Minute) // Peek did not mark it used
	if _, ok := s.Lookup(idle); ok {
		t.Fatal("a sign-in idle for its idle time still works")
	}
}

func TestDelete(t *testing.T) {
	s := newStore(&clock{t: time.Unix(1e9, 0)}, time.Hour, time.Hour)
	id, sess := s.Create("a")
	other, _ := s.Create("a")
	s.Delete(id)
	s.Delete("unknown")
	if _, ok := s.Lookup(id); ok {
		t.Fatal("a deleted sign-in works")
	}
	<-sess.Ended
	if _, ok := s.Lookup(other); !ok {
		t.Fatal("deleting one sign-in ended another")
	}
	if _, ok := s.Lookup(""); ok {
		t.Fatal("the empty id works")
	}
}

// TestBounded: a client signing in with its token in a loop holds at most
// MaxPerSubject sign-ins and ends only its own; many subjects together
// hold at most MaxLive, the subject holding the most giving way.
func TestBounded(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := newStore(c, time.Hour, time.Hour)
	victim, _ := s.Create("victim")
	for range 10 * MaxPerSubject {
		c.t = c.t.Add(time.Millisecond)
		s.Create("looper")
	}
	if n := s.Len(); n != MaxPerSubject+1 {
		t.Fatalf("%d sign-ins held, want %d", n, MaxPerSubject+1)
	}
	if _, ok := s.Lookup(victim); !ok {
		t.Fatal("another subject's loop ended the victim's sign-in")
	}
	for i := range MaxLive + 500 {
		c.t = c.t.Add(time.Millisecond)
		s.Create(fmt.Sprintf("s%d", i%(MaxLive/MaxPerSubject*2)))
	}
	if n := s.Len(); n > MaxLive {
		t.Fatalf("%d sign-ins held, over %d", n, MaxLive)
	}
	if _, ok := s.Lookup(victim); !ok {
		t.Fatal("the subject holding one sign-in lost it to subjects holding many")
	}
}

func BenchmarkLookup(b *testing.B) {
	s := newStore(&clock{t: time.Unix(1e9, 0)}, time.Hour, time.Hour)
	id, _ := s.Create("a")
	for i := range 1000 {
		s.Create(fmt.Sprint(i))
	}
	for b.Loop() {
		if _, ok := s.Lookup(id); !ok {
			b.Fatal("refused")
		}
	}
}
