package summary

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		max  int
		ok   bool
	}{
		{"a summary within the cap", Result{Text: "## Goal\nx", FinishReason: FinishStop}, 10, true},
		{"no cap", Result{Text: strings.Repeat("x", 4000), FinishReason: FinishStop}, 0, true},
		{"exactly the cap", Result{Text: strings.Repeat("x", 40), FinishReason: FinishStop}, 10, true},
		{"empty", Result{Text: " \n\t", FinishReason: FinishStop}, 10, false},
		{"cut off by the output cap", Result{Text: "## Goal", FinishReason: FinishLength}, 10, false},
		{"over the cap by estimate", Result{Text: strings.Repeat("x", 41), FinishReason: FinishStop}, 10, false},
		// UTF-16 units, not bytes: 20 astral characters are 40 units.
		{"astral characters count twice", Result{Text: strings.Repeat("😀", 21), FinishReason: FinishStop}, 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.res, tt.max)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidSummary)) {
				t.Errorf("Validate = %v, want ok=%v (else ErrInvalidSummary)", err, tt.ok)
			}
		})
	}
}
