package tokens

import (
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/jsondepth"
)

// The expected lengths are those of JavaScript's
// JSON.stringify(JSON.parse(raw)).length, worked out by hand.
func TestStringifiedLen(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{`{}`, 2},
		{`[]`, 2},
		{`{"a":1}`, 7},
		{`{ "a" : 1.0 }`, 7},                // 1.0 prints as 1
		{`{"a":1e2}`, 9},                    // 100
		{`{"a":-0.5}`, 10},                  // -0.5
		{`{"a":-0}`, 7},                     // -0 prints as 0
		{`{"a":1e21}`, 11},                  // 1e+21
		{`{"a":1e-7}`, 10},                  // 1e-7
		{`{"a":0.000001}`, 14},              // 0.000001
		{`{"a":123456789012345678901}`, 27}, // 123456789012345680000: exponent 20 stays plain
		{`{"a":1.5e300}`, 14},               // 1.5e+300
		{`{"a":1e999}`, 10},                 // Infinity → null
		{`{"a":"\u00e9"}`, 9},               // é counts as one unit
		{`{"a":"\/"}`, 9},                   // \/ prints as /
		{`{"a":"<>&"}`, 11},                 // no HTML escaping
		{`{"a":"\u0001"}`, 14},              // control characters as \u0001
		{`{"a":"\n\t"}`, 12},                // short forms
		{`{"a":"😀"}`, 10},                   // astral: two units
		{`{"a":"\ud83d\ude00"}`, 10},        // the same pair escaped
		{`{"a":"\ud83d"}`, 14},              // lone surrogate printed escaped
		{`{"a":1,"b":2,"a":333}`, 15},       // duplicate: first position, last value
		{`{"a":[1, 2 ,{"b":null}],"c":true}`, 31},
		{`"x"`, 3},
		{`null`, 4},
	} {
		if got := StringifiedLen([]byte(tc.raw)); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.raw, got, tc.want)
		}
	}
}

func TestEstimateByRole(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{`{"role":"user","content":"abcdefgh"}`, 2},
		{`{"role":"user","content":[{"type":"text","text":"abcde"},{"type":"image","data":"xx"}]}`, 2},
		{`{"role":"assistant","content":[{"type":"text","text":"abcd"},{"type":"thinking","thinking":"ab"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"a"}}]}`, 6},
		{`{"role":"toolResult","content":[{"type":"image","data":"x"}]}`, 1200},
		{`{"role":"bashExecution","command":"ls","output":"a\nb"}`, 2},
		{`{"role":"compactionSummary","summary":"😀😀"}`, 1},
		{`{"role":"custom","content":"abcde"}`, 2},
		{`{"role":"mystery","content":"abcde"}`, 0},
	} {
		if got := Estimate([]byte(tc.raw)); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.raw, got, tc.want)
		}
	}
}

func TestContextTokens(t *testing.T) {
	msgs := [][]byte{
		[]byte(`{"role":"user","content":"abcdefgh"}`),
		[]byte(`{"role":"assistant","content":[],"usage":{"input":10,"output":5,"cacheRead":1,"cacheWrite":1,"totalTokens":0},"stopReason":"stop"}`),
		[]byte(`{"role":"assistant","content":[],"usage":{"totalTokens":999},"stopReason":"aborted"}`),
		[]byte(`{"role":"user","content":"abcd"}`),
	}
	got := Context(len(msgs), func(i int) []byte { return msgs[i] })
	if got.Tokens != 17+0+1 || got.LastUsageIndex != 1 {
		t.Errorf("got %+v", got)
	}
	if !ShouldCompact(true, 101, 200, 100) || ShouldCompact(true, 100, 200, 100) || ShouldCompact(false, 1000, 200, 100) {
		t.Error("ShouldCompact")
	}
}

// TestStringifiedLenDeep: up to the nesting limit the length is exact;
// past it (30 million levels) it is a best effort, without recursion.
func TestStringifiedLenDeep(t *testing.T) {
	n := jsondepth.Max
	raw := strings.Repeat("[", n) + strings.Repeat(" ]", n)
	if got := StringifiedLen([]byte(raw)); got != 2*n {
		t.Errorf("depth Max: %d, want %d", got, 2*n)
	}
	over := "[" + raw + "]"
	if got := StringifiedLen([]byte(over)); got <= 0 {
		t.Errorf("depth Max+1: %d", got)
	}
	huge := strings.Repeat(`{"a":[`, 5_000_000) + `"]}"`
	if got := StringifiedLen([]byte(huge)); got <= 0 {
		t.Errorf("30 million levels: %d", got)
	}
	// Something after a skipped deep value is still counted.
	if got := StringifiedLen([]byte(`{"b":` + over + `,"c":1}`)); got < 2*n+len(`{"b":,"c":1}`) {
		t.Errorf("members after a deep one: %d", got)
	}
}

// TestEstimateDeep: a message whose tool-call arguments nest 30 million
// deep is estimated, not a stack overflow.
func TestEstimateDeep(t *testing.T) {
	deep := strings.Repeat("[", 30_000_000) + strings.Repeat("]", 30_000_000)
	msg := `{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":` + deep + `}]}`
	if got := Estimate([]byte(msg)); got <= 0 {
		t.Errorf("Estimate = %d", got)
	}
}
