// Package connlimit is the former home of the listeners' connection caps,
// now internal/admission's.
//
// Deprecated: use internal/admission. These names remain only so that
// code written against them keeps building until it says admission.
package connlimit

import (
	"net"

	"github.com/pith-dev/pith/internal/admission"
)

type (
	// Deprecated: use admission.Caps (PerAddress is its PerKey).
	Caps = admission.Caps
	// Deprecated: use admission.Listener.
	Listener = admission.Listener
	// Deprecated: use admission.Options.
	Options = admission.Options
)

// Deprecated: use admission.Listen.
func Listen(l net.Listener, o Options) *Listener { return admission.Listen(l, o) }

// Deprecated: use admission.DefaultCaps.
func DefaultCaps(nofile uint64, n int) Caps { return admission.DefaultCaps(nofile, n) }

// Deprecated: use admission.Resolve.
func Resolve(total, perAddress int, nofile uint64, n int) Caps {
	return admission.Resolve(total, perAddress, nofile, n)
}

// Deprecated: use admission.DescriptorLimit.
func DescriptorLimit() uint64 { return admission.DescriptorLimit() }
