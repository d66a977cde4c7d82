package main

import (
	"bytes"
	"strings"
	"testing"
)

// stream is what `go test -json` writes for a package with a passing, a
// skipped and a failing test, and a package without tests.
const stream = `{"Action":"start","Package":"github.com/pith-dev/pith/a"}
{"Action":"run","Package":"github.com/pith-dev/pith/a","Test":"TestPass"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestPass","Output":"    a_test.go:5: chatter nobody needs\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestPass","Output":"--- PASS: TestPass (0.00s)\n"}
{"Action":"pass","Package":"github.com/pith-dev/pith/a","Test":"TestPass"}
{"Action":"run","Package":"github.com/pith-dev/pith/a","Test":"TestSkip"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestSkip","Output":"    a_test.go:9: chromium not found\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"github.com/pith-dev/pith/a","Test":"TestSkip"}
{"Action":"run","Package":"github.com/pith-dev/pith/a","Test":"TestFail"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestFail","Output":"    a_test.go:14: want 1, got 2\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"github.com/pith-dev/pith/a","Test":"TestFail"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Output":"FAIL\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/a","Output":"FAIL\tgithub.com/pith-dev/pith/a\t0.01s\n"}
{"Action":"fail","Package":"github.com/pith-dev/pith/a"}
{"Action":"output","Package":"github.com/pith-dev/pith/b","Output":"PASS\n"}
{"Action":"output","Package":"github.com/pith-dev/pith/b","Output":"ok  \tgithub.com/pith-dev/pith/b\t0.02s\n"}
{"Action":"pass","Package":"github.com/pith-dev/pith/b"}
{"Action":"output","Package":"github.com/pith-dev/pith/c","Output":"?   \tgithub.com/pith-dev/pith/c\t[no test files]\n"}
{"Action":"skip","Package":"github.com/pith-dev/pith/c"}
`

func TestRelayPrintsWhatGoTestWouldAndCollectsSkips(t *testing.T) {
	var out bytes.Buffer
	skips := relay(strings.NewReader(stream), &out)
	want := "    a_test.go:14: want 1, got 2\n--- FAIL: TestFail (0.00s)\nFAIL\nFAIL\tgithub.com/pith-dev/pith/a\t0.01s\n" +
		"ok  \tgithub.com/pith-dev/pith/b\t0.02s\n?   \tgithub.com/pith-dev/pith/c\t[no test files]\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if len(skips) != 1 || skips[0] != (skip{"github.com/pith-dev/pith/a", "TestSkip", "chromium not found"}) {
		t.Fatalf("skips = %+v", skips)
	}
	var list bytes.Buffer
	printSkips(&list, skips)
	if got := list.String(); got != "\nskipped 1 tests:\n  a  TestSkip  chromium not found\n" {
		t.Errorf("skip list = %q", got)
	}
}

func TestReasonWithoutMessage(t *testing.T) {
	if got := reason([]string{"=== RUN   TestX\n", "--- SKIP: TestX (0.00s)\n"}); got != "(no reason given)" {
		t.Errorf("reason = %q", got)
	}
}
