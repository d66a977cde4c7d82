package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomSession is a parsed session of n entries for the property tests:
// mostly a chain with some branches, user and assistant messages (the
// latter naming models), thinking level and model changes, compactions
// keeping one of the last few entries (or, now and then, a missing one)
// and, when repeats is set, some ids used twice.
func randomSession(t *testing.T, rng *rand.Rand, n int, repeats bool) *File {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"x","cwd":"/"}` + "\n")
	var ids []string
	for i := range n {
		id := fmt.Sprintf("e%03d", i)
		if repeats && i > 0 && rng.IntN(40) == 0 {
			id = ids[rng.IntN(len(ids))]
		}
		parent := "null"
		if len(ids) > 0 {
			p := ids[len(ids)-1]
			if rng.IntN(8) == 0 {
				p = ids[rng.IntN(len(ids))]
			}
			parent = `"` + p + `"`
		}
		head := fmt.Sprintf(`"id":"%s","parentId":%s,"timestamp":"x"`, id, parent)
		switch r := rng.IntN(20); {
		case r == 0:
			fmt.Fprintf(&buf, `{"type":"thinking_level_change",%s,"thinkingLevel":"t%d"}`+"\n", head, i)
		case r == 1:
			fmt.Fprintf(&buf, `{"type":"model_change",%s,"provider":"p%d","modelId":"m%d"}`+"\n", head, i, i)
		case r == 2 && len(ids) > 4:
			kept := ids[len(ids)-1-rng.IntN(4)]
			if rng.IntN(10) == 0 {
				kept = "missing"
			}
			fmt.Fprintf(&buf, `{"type":"compaction",%s,"summary":"s%d","firstKeptEntryId":"%s","tokensBefore":1}`+"\n", head, i, kept)
		case r < 10:
			fmt.Fprintf(&buf, `{"type":"message",%s,"message":{"role":"assistant","content":[{"type":"text","text":"a%d"}],"provider":"ap%d","model":"am%d"}}`+"\n", head, i, i%3, i%3)
		default:
			fmt.Fprintf(&buf, `{"type":"message",%s,"message":{"role":"user","content":"u%d"}}`+"\n", head, i)
		}
		ids = append(ids, id)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}
