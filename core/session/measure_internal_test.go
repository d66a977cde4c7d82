package session

import "testing"

// TestMeasuredWhileScanning checks that the common shapes are measured by
// the scan (the estimate is there before any use) and that content as an
// object is left to the lazy estimate.
func TestMeasuredWhileScanning(t *testing.T) {
	for line, measured := range map[string]bool{
		`{"type":"message","id":"a","message":{"role":"user","content":"hi"}}`:                                  true,
		`{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"x"}]}}`:     true,
		`{"type":"message","id":"a","message":{"role":"bashExecution","command":"ls","output":""}}`:             true,
		`{"type":"message","id":"a","message":{"role":"assistant","content":{"a":{"type":"text","text":"x"}}}}`: false,
		`{"type":"message","id":"a","message":{"role":"user","content":"hi"},"message":null}`:                   false,
		`{"type":"custom_message","id":"a","message":{"role":"user","content":"hi"}}`:                           false,
	} {
		e := &Entry{}
		if reason := scanLine([]byte(line), e, true); reason != "" {
			t.Fatal(reason)
		}
		if got := e.msgTokens > 0; got != measured {
			t.Errorf("%s: measured %v, want %v", line, got, measured)
		}
	}
}
