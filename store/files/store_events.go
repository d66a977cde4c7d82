package files

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/pith-dev/pith/store"
)

// Publish hands the event to every Watch of this Store value: files have
// no channel between processes, and one host serves a sessions directory.
func (f *Store) Publish(ctx context.Context, name string, payload []byte) error {
	if err := store.CheckName(name); err != nil {
		return err
	}
	if len(payload) > store.MaxPayload {
		return fmt.Errorf("%s: %w (%d bytes, at most %d)", name, store.ErrPayloadTooLarge, len(payload), store.MaxPayload)
	}
	if !json.Valid(payload) {
		return fmt.Errorf("%s: the event payload is not JSON", name)
	}
	ev := store.Event{Session: name, Kind: store.EventPublished, Payload: bytes.Clone(payload)}
	f.mu.Lock()
	inboxes := make([]chan store.Event, 0, len(f.watches))
	for c := range f.watches {
		inboxes = append(inboxes, c)
	}
	f.mu.Unlock()
	for _, c := range inboxes {
		select {
		case c <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// subscribe registers a Watch's inbox for published events.
func (f *Store) subscribe() (chan store.Event, func()) {
	c := make(chan store.Event, 64)
	f.mu.Lock()
	if f.watches == nil {
		f.watches = map[chan store.Event]struct{}{}
	}
	f.watches[c] = struct{}{}
	f.mu.Unlock()
	return c, func() {
		f.mu.Lock()
		delete(f.watches, c)
		f.mu.Unlock()
	}
}
