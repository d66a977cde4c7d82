package compaction

import (
	"errors"
	"strconv"
	"testing"
)

// buildFromBytes turns fuzz input into a session: each byte picks an entry
// kind, the next one its size. Tool results answer a pending call (or none:
// an orphan), so calls and results interleave with other cut points.
func buildFromBytes(data []byte) *builder {
	b := &builder{}
	var pending []string
	var ids []string
	calls := 0
	for i := 0; i+1 < len(data); i += 2 {
		size := int(data[i+1])%64 + 1
		var id string
		switch data[i] % 12 {
		case 0:
			id = b.user(size)
		case 1, 2:
			var cs []string
			for range int(data[i+1]) % 3 {
				calls++
				c := "c" + strconv.Itoa(calls)
				cs = append(cs, c+`:edit:{"path":"/f`+strconv.Itoa(calls%5)+`"}`)
				pending = append(pending, c)
			}
			id = b.assistant(size, cs...)
		case 3, 4:
			c := "orphan"
			if len(pending) > 0 {
				k := int(data[i+1]) % len(pending)
				c = pending[k]
				pending = append(pending[:k], pending[k+1:]...)
			}
			id = b.result(c, "bash", size)
		case 5:
			id = b.bash(size)
		case 6:
			id = b.customMessage(size)
		case 7:
			id = b.modelChange()
		case 8:
			id = b.add("branch_summary", `"fromId":"x","summary":"`+text(size)+`"`)
		case 9:
			if len(ids) > 0 {
				id = b.compaction(ids[int(data[i+1])%len(ids)], "s", "")
			}
		case 10:
			id = b.thinking()
		case 11:
			id = b.add("label", `"targetId":"x","label":"l"`)
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
	return b
}

func FuzzCutPoint(f *testing.F) {
	f.Add([]byte{0, 10, 1, 2, 3, 0, 3, 1, 5, 40, 3, 2, 1, 9}, uint16(30))
	f.Add([]byte{0, 1, 7, 0, 10, 0, 0, 50, 1, 1, 6, 20, 2, 60, 5, 5, 4, 1, 4, 2}, uint16(20))
	f.Add([]byte{0, 5, 1, 1, 9, 0, 0, 5, 1, 2, 3, 30, 3, 31, 8, 12, 1, 3}, uint16(5))
	f.Add([]byte{1, 2, 5, 63, 3, 0, 3, 1, 1, 0}, uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, keep uint16) {
		if len(data) > 4096 {
			// Longer inputs find nothing new and slow the fuzzer to a crawl.
			data = data[:4096]
		}
		b := buildFromBytes(data)
		if len(b.lines) == 0 {
			return
		}
		path := b.path(t)
		k := int(keep)
		for _, start := range []int{0, len(path) / 2} {
			cp := FindCutPoint(path, start, len(path), k)
			checkCut(t, path, start, len(path), cp)
		}
		prep, err := Prepare(path, Settings{ReserveTokens: 1000, KeepRecentTokens: k})
		if errors.Is(err, ErrNothingToCompact) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkCut(t, path, prep.RangeStart, len(path), prep.Cut)
		all := len(summaryMessages(path[prep.RangeStart:]))
		kept := len(summaryMessages(path[prep.Cut.FirstKeptIndex:]))
		if got := len(prep.MessagesToSummarize) + len(prep.TurnPrefixMessages) + kept; got != all {
			t.Fatalf("summarized %d + prefix %d + kept %d != %d messages in range",
				len(prep.MessagesToSummarize), len(prep.TurnPrefixMessages), kept, all)
		}
	})
}
