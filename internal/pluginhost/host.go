package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pith-dev/pith/hooks"
)

// Host manages the configured set of plugins. Apply reconciles it with a new
// configuration the way docs/behaviour.md §14 asks: start what was added or changed
// first, then hand out the new list, and only then stop what was removed or
// replaced, so no event falls between two sets.
type Host struct {
	opts Options

	mu   sync.Mutex
	sups map[string]*Supervisor
}

// NewHost returns a Host whose supervisors use opts.
func NewHost(opts Options) *Host {
	return &Host{opts: opts, sups: map[string]*Supervisor{}}
}

// Apply reconciles the running plugins with specs and returns the plugins to
// give the Dispatcher (in spec order). A plugin that fails to start is
// logged, left out, and reported in the joined error; the others are applied.
// The caller swaps the returned list into its Dispatcher and then calls
// the returned retire function, which stops what the new set replaced.
func (h *Host) Apply(ctx context.Context, specs []Spec) (plugins []hooks.Plugin, retire func(context.Context), err error) {
	if err := ValidateSpecs(specs); err != nil {
		return nil, nil, err
	}

	h.mu.Lock()
	defer h.mu.Unlock()

	// Start every new or changed plugin at once: each start is mostly
	// waiting (process start, TLS handshake, Describe), so the
	// set starts in about the time of its slowest member.
	started := make([]*Supervisor, len(specs))
	startErr := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		if cur := h.sups[sp.Name]; cur != nil && cur.Spec().sameProcess(sp) && cur.State() != StateDisabled {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sup := NewSupervisor(sp, h.opts)
			if err := sup.Start(ctx); err != nil {
				startErr[i] = err
				return
			}
			started[i] = sup
		}()
	}
	wg.Wait()

	next := map[string]*Supervisor{}
	var old []*Supervisor
	var errs []error
	for i, sp := range specs {
		cur := h.sups[sp.Name]
		sup := started[i]
		switch {
		case sup == nil && startErr[i] == nil:
			// Unchanged process: keep it, with the new call settings.
			cur.SetInfo(sp)
			next[sp.Name] = cur
			plugins = append(plugins, cur)
		case startErr[i] != nil:
			h.opts.loggerOrNull().Error("plugin not started", "plugin", sp.Name, "error", startErr[i])
			errs = append(errs, startErr[i])
			if cur != nil {
				// Keep the running old version rather than nothing.
				next[sp.Name] = cur
				plugins = append(plugins, cur)
			}
		default:
			if cur != nil {
				old = append(old, cur)
			}
			next[sp.Name] = sup
			plugins = append(plugins, sup)
		}
	}
	for name, sup := range h.sups {
		if next[name] == nil {
			old = append(old, sup)
		}
	}
	h.sups = next
	retire = func(ctx context.Context) { stopAll(ctx, old) }
	return plugins, retire, errors.Join(errs...)
}

// ValidateSpecs checks each spec and that no two share a name.
func ValidateSpecs(specs []Spec) error {
	seen := map[string]bool{}
	for _, sp := range specs {
		if err := sp.Validate(); err != nil {
			return err
		}
		if seen[sp.Name] {
			return fmt.Errorf("plugin name %q is used twice", sp.Name)
		}
		seen[sp.Name] = true
	}
	return nil
}

// Supervisor returns the supervisor of the named plugin, or nil.
func (h *Host) Supervisor(name string) *Supervisor {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sups[name]
}

// StopAll shuts every plugin down (Shutdown RPC, then kill) concurrently
// and waits.
func (h *Host) StopAll(ctx context.Context) {
	stopAll(ctx, h.takeAll())
}

// takeAll empties the host and returns what it held.
func (h *Host) takeAll() []*Supervisor {
	h.mu.Lock()
	defer h.mu.Unlock()
	sups := make([]*Supervisor, 0, len(h.sups))
	for _, s := range h.sups {
		sups = append(sups, s)
	}
	h.sups = map[string]*Supervisor{}
	return sups
}

func stopAll(ctx context.Context, sups []*Supervisor) { stopEach(ctx, sups, (*Supervisor).Stop) }

// stopEach stops every supervisor at once and waits for all.
func stopEach(ctx context.Context, sups []*Supervisor, stop func(*Supervisor, context.Context)) {
	var wg sync.WaitGroup
	for _, s := range sups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop(s, ctx)
		}()
	}
	wg.Wait()
}
