// Command compatplugin is a plugin written against the SDK as it was before
// Serve returned an error: a handler struct with value-receiver methods and
// `sdk.Serve(h, sdk.WithName(…))` as a bare statement. It is frozen: do not
// modernise it. TestCompatPlugin builds and runs it, so a change to the SDK
// that would break such plugins fails the tests.
package main

import (
	"context"
	"strings"

	"github.com/pith-dev/pith/sdk"
)

type compat struct{}

func (compat) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	if strings.Contains(ev.CustomInstructions, "stop") {
		return &sdk.BeforeCompactResult{Cancel: true, CancelReason: "asked to stop"}, nil
	}
	return nil, nil
}

func (compat) Compacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	return &sdk.CompactingResult{Context: append([]string{"compat"}, ev.ModifiedFiles...)}, nil
}

func main() {
	sdk.Serve(compat{}, sdk.WithName("compat"), sdk.WithVersion("0.1.0"))
}
