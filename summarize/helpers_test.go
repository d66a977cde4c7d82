package summarize

import (
	"flag"
	"testing"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// testKey is the credential the tests put in the environment; no error text
// may ever contain it.
const testKey = httpfake.TestKey

var testRequest = summary.Request{
	Purpose:      summary.PurposeHistory,
	SystemPrompt: "You only summarize.",
	Prompt:       "<conversation>\n[User]: fix the parser\n</conversation>",
	MaxTokens:    1000,
}

// checkGolden compares a JSON request body with testdata/<name>; -update
// rewrites the file.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	httpfake.CheckGolden(t, name, got, *update)
}
