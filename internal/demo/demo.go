// Package demo writes the bundled demo session (examples/demo-session.jsonl):
// a realistic coding-agent session in pi's format, made through the same
// Store API that Pith uses, with a fixed clock and id source so the file is
// reproducible. It has what the tour needs to show: tool calls and large
// outputs, an error, decisions, an abandoned branch, a label, a bash
// execution, a custom message and an unanswered question at the end.
package demo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// Write creates the demo session at path (which must not exist).
func Write(path string) error {
	clock := time.Date(2026, 11, 2, 9, 14, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	st, err := files.Create(path, "/home/dev/ledger", files.Options{
		Now:    func() time.Time { clock = clock.Add(time.Duration(3+rng.IntN(40)) * time.Second); return clock },
		Random: &pcgReader{rng},
	})
	if err != nil {
		return err
	}
	defer st.Close()
	w := &writer{st: st}
	w.script()
	return w.err
}

type pcgReader struct{ r *rand.Rand }

func (p *pcgReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(p.r.Uint32())
	}
	return len(b), nil
}

type writer struct {
	st    *files.Session
	err   error
	calls int
	ts    int64
}

func (w *writer) add(d session.Draft) *session.Entry {
	if w.err != nil {
		return nil
	}
	es, err := w.st.Append(d)
	if err != nil {
		w.err = err
		return nil
	}
	return es[0]
}

func (w *writer) now() int64 { w.ts += 7000; return 1793610000000 + w.ts }

func (w *writer) msg(m map[string]any) *session.Entry {
	m["timestamp"] = w.now()
	return w.add(session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": m}})
}

func (w *writer) user(text string) *session.Entry {
	return w.msg(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
}

type call struct {
	name string
	args map[string]any
}

// assistant writes an assistant turn; usage grows with the conversation so
// context accounting has real numbers to work with.
func (w *writer) assistant(thinking, text string, calls []call, input int) (*session.Entry, []string) {
	var content []any
	if thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": thinking})
	}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	var ids []string
	for _, c := range calls {
		w.calls++
		id := fmt.Sprintf("toolu_demo%04d", w.calls)
		ids = append(ids, id)
		content = append(content, map[string]any{"type": "toolCall", "id": id, "name": c.name, "arguments": c.args})
	}
	stop := "stop"
	if len(calls) > 0 {
		stop = "toolUse"
	}
	out := 40 + len(text)/4
	e := w.msg(map[string]any{
		"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
		"model": "claude-sonnet-4-5",
		"usage": map[string]any{"input": 12, "output": out, "cacheRead": input, "cacheWrite": 900,
			"totalTokens": 12 + out + input + 900},
		"stopReason": stop,
	})
	return e, ids
}

func (w *writer) result(id, tool, text string, isError bool) *session.Entry {
	return w.msg(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": tool,
		"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isError})
}

func read(path string) call { return call{"read", map[string]any{"path": path}} }
func bash(cmd string) call  { return call{"bash", map[string]any{"command": cmd, "timeout": 120}} }
func edit(path, old, new string) call {
	return call{"edit", map[string]any{"path": path, "oldText": old, "newText": new}}
}
func write(path, content string) call {
	return call{"write", map[string]any{"path": path, "content": content}}
}

func (w *writer) script() {
	w.add(session.Draft{Type: session.TypeModelChange, Fields: map[string]any{"provider": "anthropic", "modelId": "claude-sonnet-4-5"}})
	w.add(session.Draft{Type: session.TypeThinkingLevelChange, Fields: map[string]any{"thinkingLevel": "medium"}})

	w.user("`ledger import` crashes on CSV files exported from Excel: the first column name comes out as \"\\ufeffdate\" and then the importer panics with a nil map entry. Please fix it and add a regression test. Don't change the public API of internal/csvimport, and always run `go test ./...` before you tell me it's done.")
	_, ids := w.assistant("The symptom points at a UTF-8 byte order mark that is not stripped before the header is parsed. Read the reader first.",
		"I'll start with the CSV reader, where the header row is parsed.", []call{read("internal/csvimport/reader.go")}, 3100)
	w.result(ids[0], "read", goSource("csvimport", 260, 1), false)
	_, ids = w.assistant("", "Let me reproduce the failure with the existing tests and a BOM-prefixed sample.",
		[]call{bash("cd /home/dev/ledger && printf '\\xef\\xbb\\xbfdate,amount\\n2026-01-02,12.50\\n' > /tmp/bom.csv && go run ./cmd/ledger import /tmp/bom.csv")}, 9800)
	w.result(ids[0], "bash", panicTrace(), true)
	_, ids = w.assistant("The header map is keyed by the raw first cell, so \"\\ufeffdate\" never matches \"date\" and columns[\"date\"] is nil.",
		"Confirmed: the header lookup uses the raw first cell, which still carries the BOM. I decided to strip the BOM inside `NewReader` rather than in the `import` command, so every caller of the package gets the fix without an API change.",
		[]call{edit("internal/csvimport/reader.go",
			"\tr := csv.NewReader(src)\n",
			"\tr := csv.NewReader(skipBOM(src))\n")}, 10400)
	w.result(ids[0], "edit", "Successfully replaced text in internal/csvimport/reader.go.", false)
	_, ids = w.assistant("", "Now the helper and a regression test.",
		[]call{
			edit("internal/csvimport/reader.go", "// skipBOM placeholder\n", "// skipBOM drops a leading UTF-8 byte order mark, as Excel writes one.\nfunc skipBOM(r io.Reader) io.Reader {\n\tbr := bufio.NewReader(r)\n\tif b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xef, 0xbb, 0xbf}) {\n\t\tbr.Discard(3)\n\t}\n\treturn br\n}\n"),
			write("internal/csvimport/reader_bom_test.go", goSource("csvimport", 40, 2)),
		}, 10900)
	w.result(ids[0], "edit", "Successfully replaced text in internal/csvimport/reader.go.", false)
	w.result(ids[1], "write", "Successfully wrote 1422 bytes to internal/csvimport/reader_bom_test.go", false)
	_, ids = w.assistant("", "", []call{bash("cd /home/dev/ledger && go test ./...")}, 11600)
	w.result(ids[0], "bash", testOutput(false), false)
	fixed, _ := w.assistant("",
		"Fixed. `ledger import` now accepts BOM-prefixed CSV files:\n\n- `internal/csvimport/reader.go`: `NewReader` wraps its source in `skipBOM`, which drops a leading UTF-8 byte order mark.\n- `internal/csvimport/reader_bom_test.go`: regression test with an Excel-style file.\n\n`go test ./...` passes (14 packages).", nil, 12900)
	if fixed != nil {
		w.add(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": fixed.ID, "label": "bom-fix"}})
	}
	w.msg(map[string]any{"role": "bashExecution", "command": "git status --short && git log -1 --format='%h %an <%ae> %s'", "output": " M internal/csvimport/reader.go\n?? internal/csvimport/reader_bom_test.go\n4f1c2d9 Dana Developer <dana.dev@example.com> csvimport: handle quoted headers\n", "exitCode": 0, "cancelled": false, "truncated": false})

	w.user("Great. Next: `ledger report --by month` takes 40 seconds on last year's export (1.2M rows). Profile it and make it fast. Prefer the standard library; no new dependencies.")
	_, ids = w.assistant("", "I'll read the report code and the aggregation it calls.",
		[]call{read("cmd/ledger/report.go"), read("internal/report/aggregate.go")}, 14100)
	w.result(ids[0], "read", goSource("main", 420, 3), false)
	w.result(ids[1], "read", goSource("report", 520, 4), false)
	_, ids = w.assistant("", "", []call{bash("cd /home/dev/ledger && go test -run '^$' -bench BenchmarkMonthly -cpuprofile /tmp/cpu.out ./internal/report && go tool pprof -top /tmp/cpu.out | head -40")}, 31800)
	w.result(ids[0], "bash", profileOutput(), false)
	branchPoint, _ := w.assistant("Most time is in time.Parse and in map growth inside groupByMonth; the sort runs once per insert.",
		"The profile shows three hot spots in `internal/report/aggregate.go`: `time.Parse` on every row (41%), map growth in `groupByMonth` (22%), and `sort.Slice` called after every insert (19%).", nil, 33400)

	// First attempt: a cache of parsed dates. It breaks the tests and the
	// user goes back to try something else, leaving this branch behind.
	_, ids = w.assistant("", "First idea: cache parsed dates by their string.",
		[]call{edit("internal/report/aggregate.go", "\td, err := time.Parse(\"2006-01-02\", row.Date)\n", "\td, err := dateCache.parse(row.Date)\n")}, 34000)
	w.result(ids[0], "edit", "Successfully replaced text in internal/report/aggregate.go.", false)
	_, ids = w.assistant("", "", []call{bash("cd /home/dev/ledger && go test ./internal/report/...")}, 34500)
	w.result(ids[0], "bash", testOutput(true), true)
	w.assistant("", "The cache is shared between goroutines in `ParallelMonthly`, which makes the race detector fail. I could add a mutex, but that would give back most of the gain.", nil, 36200)

	if branchPoint != nil {
		if err := w.st.SetLeaf(branchPoint.ID); err != nil && w.err == nil {
			w.err = err
		}
	}
	w.add(session.Draft{Type: session.TypeCustomMessage, Fields: map[string]any{
		"customType": "note", "content": "Reminder from the team: report output must stay byte-identical; golden files live in internal/report/testdata.", "display": true}})
	w.user("Skip the cache idea. Parse the date once per row with a fixed-layout parser and pre-size the maps; sort once at the end.")
	_, ids = w.assistant("", "Going with a fixed-layout date parser and a single sort at the end instead of the cache.",
		[]call{edit("internal/report/aggregate.go", "\td, err := time.Parse(\"2006-01-02\", row.Date)\n", "\td, err := parseISODate(row.Date)\n"),
			edit("internal/report/aggregate.go", "\tmonths := map[string]*Bucket{}\n", "\tmonths := make(map[string]*Bucket, 64)\n")}, 35100)
	w.result(ids[0], "edit", "Successfully replaced text in internal/report/aggregate.go.", false)
	w.result(ids[1], "edit", "Successfully replaced text in internal/report/aggregate.go.", false)
	_, ids = w.assistant("", "", []call{bash("cd /home/dev/ledger && go test ./... && go test -run '^$' -bench BenchmarkMonthly ./internal/report")}, 36900)
	w.result(ids[0], "bash", testOutput(false)+"\nBenchmarkMonthly-8   \t      12\t  94120311 ns/op\t 1882 B/op\t      31 allocs/op\nPASS\nok  \tgithub.com/example/ledger/internal/report\t2.103s\n", false)
	w.assistant("",
		"`ledger report --by month` is now about 8x faster on the benchmark (94 ms/op, was 780 ms/op); `go test ./...` passes and the golden files in `internal/report/testdata` are unchanged.\n\nNext steps I see:\n1. Stream rows instead of loading the whole file (memory is still 1.1 GB on the big export).\n2. Add a benchmark for `--by category`.\n\nShould I also add a `--parallel` flag to the report command, or keep it single-threaded?", nil, 38800)
}

var identifiers = []string{"Reader", "Row", "Bucket", "Header", "Column", "Amount", "Ledger", "Entry", "Month", "Category", "Total", "Parser", "Record", "Budget", "Account"}

// goSource makes plausible Go source of n lines, deterministic per seed.
func goSource(pkg string, n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 99))
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"encoding/csv\"\n\t\"fmt\"\n\t\"io\"\n\t\"sort\"\n\t\"time\"\n)\n\n", pkg)
	lines := 10
	for lines < n {
		a, c := identifiers[r.IntN(len(identifiers))], identifiers[r.IntN(len(identifiers))]
		fmt.Fprintf(&b, "// %s%s converts a %s into its %s form; it keeps the order of the input.\n", a, c, strings.ToLower(a), strings.ToLower(c))
		fmt.Fprintf(&b, "func %s%s(in []%s) ([]%s, error) {\n", a, c, a, c)
		fmt.Fprintf(&b, "\tout := make([]%s, 0, len(in))\n\tfor i, v := range in {\n", c)
		fmt.Fprintf(&b, "\t\tif v.%s == \"\" {\n\t\t\treturn nil, fmt.Errorf(\"row %%d: empty %s\", i+1)\n\t\t}\n", c, strings.ToLower(c))
		fmt.Fprintf(&b, "\t\tout = append(out, %s{%s: v.%s, At: time.Unix(int64(i), 0)})\n\t}\n", c, a, c)
		fmt.Fprintf(&b, "\tsort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })\n\treturn out, nil\n}\n\n")
		lines += 12
	}
	return b.String()
}

func panicTrace() string {
	return "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\ngithub.com/example/ledger/internal/csvimport.(*Reader).Next(0xc000118000)\n\t/home/dev/ledger/internal/csvimport/reader.go:88 +0x1f4\ngithub.com/example/ledger/internal/csvimport.ReadAll({0x5a1e40, 0xc00010c000})\n\t/home/dev/ledger/internal/csvimport/reader.go:131 +0x9d\nmain.runImport({0xc000012240, 0x1, 0x1})\n\t/home/dev/ledger/cmd/ledger/import.go:42 +0x105\nmain.main()\n\t/home/dev/ledger/cmd/ledger/main.go:27 +0x2e5\nexit status 2\n\n\nCommand exited with code 1"
}

func testOutput(fail bool) string {
	pkgs := []string{"cmd/ledger", "internal/budget", "internal/category", "internal/csvimport", "internal/currency", "internal/export", "internal/ledger", "internal/money", "internal/report", "internal/rules", "internal/store", "internal/sync", "internal/tags", "internal/ui"}
	var b strings.Builder
	for i, p := range pkgs {
		if fail && p == "internal/report" {
			b.WriteString("==================\nWARNING: DATA RACE\nWrite at 0x00c0001a2c30 by goroutine 9:\n  runtime.mapassign_faststr()\n  github.com/example/ledger/internal/report.(*cache).parse()\n      /home/dev/ledger/internal/report/cache.go:21 +0x8c\n==================\n--- FAIL: TestParallelMonthly (0.04s)\n    testing.go:1490: race detected during execution of test\nFAIL\nFAIL\tgithub.com/example/ledger/internal/report\t0.512s\n")
			continue
		}
		fmt.Fprintf(&b, "ok  \tgithub.com/example/ledger/%s\t0.%03ds\n", p, 100+i*37)
	}
	if fail {
		b.WriteString("FAIL\n\n\nCommand exited with code 1")
	}
	return b.String()
}

func profileOutput() string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/example/ledger/internal/report\nBenchmarkMonthly-8   \t       2\t 781233405 ns/op\nPASS\nShowing nodes accounting for 2.91s, 94.17% of 3.09s total\n      flat  flat%   sum%        cum   cum%\n")
	fns := []string{"time.Parse", "runtime.mapassign_faststr", "sort.Slice", "runtime.mallocgc", "strconv.ParseFloat", "report.groupByMonth", "runtime.growslice", "time.parse", "runtime.memmove", "csv.(*Reader).readRecord"}
	for i, f := range fns {
		fmt.Fprintf(&b, "     %.2fs %5.2f%% %5.2f%%      %.2fs %5.2f%%  %s\n", 1.2/float64(i+1), 38.0/float64(i+1), 40.0+float64(i)*5, 1.3/float64(i+1), 41.0/float64(i+1), f)
	}
	return b.String()
}
