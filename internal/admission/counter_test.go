package admission

import (
	"errors"
	"net/http"
	"testing"
)

// TestCounterShareThenTotal: a key's share is checked before the total,
// each refusal names its bound, and a hold given back makes room.
func TestCounterShareThenTotal(t *testing.T) {
	c := Counter[string]{Keys: Addresses}
	caps := Caps{Total: 3, PerKey: 2}
	for _, k := range []string{"a", "a", "b"} {
		if err := c.Acquire(k, caps); err != nil {
			t.Fatalf("hold for %s: %v", k, err)
		}
	}
	err := c.Acquire("a", caps)
	var r *Refusal
	if !errors.As(err, &r) || !errors.Is(err, ErrAddressLimit) || r.Held != 2 || r.Cap != 2 {
		t.Fatalf("a third hold for a: %v, want its address's share (2 of 2)", err)
	}
	if err := c.Acquire("b", caps); !errors.Is(err, ErrCapacity) {
		t.Fatalf("a fourth hold in all: %v, want ErrCapacity", err)
	}
	c.Release("a")
	if total, forKey := c.Held("a"); total != 2 || forKey != 1 {
		t.Fatalf("held after a release: %d in all, %d for a; want 2, 1", total, forKey)
	}
	release, err := c.Take("b", caps)
	if err != nil {
		t.Fatal(err)
	}
	release()
	release() // given back once
	if total, forKey := c.Held("b"); total != 2 || forKey != 1 {
		t.Fatalf("held after a release called twice: %d in all, %d for b; want 2, 1", total, forKey)
	}
}

// TestCounterCallers: a caller's share is its own limit, and caps of 0
// bound nothing; caps read at each hold apply at once.
func TestCounterCallers(t *testing.T) {
	var c Counter[string]
	for range 5 {
		if err := c.Acquire("x", Caps{}); err != nil {
			t.Fatalf("unbounded: %v", err)
		}
	}
	if err := c.Acquire("x", Caps{PerKey: 5}); !errors.Is(err, ErrCallerLimit) {
		t.Fatalf("a caller at its share: %v, want ErrCallerLimit", err)
	}
	if err := c.Acquire("y", Caps{PerKey: 5}); err != nil {
		t.Fatalf("another caller: %v", err)
	}
}

// TestRefusalExplained: an explained refusal reads as its owner wrote it
// and still matches its bound.
func TestRefusalExplained(t *testing.T) {
	own := errors.New("own words")
	r := (&Refusal{Bound: ErrCallerLimit, Held: 1, Cap: 1}).Explained(own)
	if r.Error() != "own words" || !errors.Is(r, own) || !errors.Is(r, ErrCallerLimit) {
		t.Fatalf("explained refusal %q does not match both its reason and its bound", r)
	}
}

// TestHTTPStatus is the package's rule: the caller's own limit is 429,
// a shared capacity 503.
func TestHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		bound error
		want  int
	}{{ErrCallerLimit, http.StatusTooManyRequests}, {ErrAddressLimit, http.StatusServiceUnavailable}, {ErrCapacity, http.StatusServiceUnavailable}} {
		if got := HTTPStatus(&Refusal{Bound: tc.bound}); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.bound, got, tc.want)
		}
	}
}

// TestBytesAdmit: a budget refuses once it is held, and passes as bytes
// come back.
func TestBytesAdmit(t *testing.T) {
	var b Bytes
	b.Lend(10)
	if err := b.Admit(10); !errors.Is(err, ErrCallerLimit) {
		t.Fatalf("at the budget: %v, want ErrCallerLimit", err)
	}
	b.Return(1)
	if err := b.Admit(10); err != nil {
		t.Fatalf("below the budget: %v", err)
	}
}
