// Command scripted is a test plugin whose answer to each event is chosen by
// flags, so one binary covers every host-side scenario: normal answers,
// errors, panics, hangs, crashes, invalid results, host API round trips and
// garbage on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/sdk"
)

// stderr is the pipe the host parses, captured before go-plugin swaps
// os.Stderr for its stdio stream.
var stderr = os.Stderr

type plugin struct {
	name        string
	marker      string
	other       string
	record      string
	prompt      string
	garbage     bool
	say         string
	recordMu    sync.Mutex
	beforeComp  string
	compacting  string
	beforeTree  string
	compactNote string
	treeNote    string
}

func main() {
	p := &plugin{}
	flag.StringVar(&p.name, "name", "scripted", "name reported in Describe and used in answers")
	flag.StringVar(&p.beforeComp, "before-compact", "off", "off|none|cancel|compact|echo|invalid|error|panic|crash|hang|exit|exit-once|host|host-deep|huge-details|steal|page|flood|leave")
	flag.StringVar(&p.compacting, "compacting", "off", "off|none|context|inject|error|hang|huge-preserve|deep-preserve|huge-context")
	flag.StringVar(&p.prompt, "prompt", "", "prompt returned by compacting=context")
	flag.StringVar(&p.beforeTree, "before-tree", "off", "off|none|cancel|summary|invalid")
	flag.StringVar(&p.compactNote, "compact", "off", "off|record|hang|error")
	flag.StringVar(&p.treeNote, "tree", "off", "off|record")
	flag.StringVar(&p.record, "record", "", "file notifications are appended to")
	flag.StringVar(&p.other, "other", "", "steal: the session id to try to read")
	flag.StringVar(&p.marker, "marker", "", "exit-once: exit only while this file does not exist; leave: wait until it holds 4 bytes (one per completion the host started)")
	flag.BoolVar(&p.garbage, "garbage", false, "write garbage and odd JSON log lines to stderr on every call")
	flag.StringVar(&p.say, "say", "", "on session_before_compact, log this text (a Go-quoted string is unquoted first: arguments cannot hold a NUL) every way a plugin can: a plain stderr line, an hclog JSON line (as message, key, value and nested value) and a host Log call; cancel adds it to its reason")
	spawn := flag.String("spawn", "", "start two long-running children, one in a new session (setsid), and write their pids to this file")
	holder := flag.String("spawn-stdout-holder", "", "start a long-running child in a new session that keeps the plugin's stdout and stderr open, and write its pid to this file")
	orphan := flag.String("spawn-orphan", "", "double-fork a long-running process in a new session, whose parent exits at once, and write its pid to this file")
	orphanOutput := flag.Bool("orphan-keeps-output", false, "spawn-orphan: the process keeps the plugin's stdout and stderr open instead of /dev/null")
	dumpEnv := flag.String("dump-env", "", "write the plugin's environment, NAME=value entries separated by NUL bytes, to this file")
	dumpStdin := flag.String("dump-stdin", "", "write what the plugin reads from its standard input until end of file (at most 1 KiB) to this file")
	floodMB := flag.Int("flood-stderr", 0, "write this many MiB of 1 KiB lines to stderr, in the background")
	floodDone := flag.String("flood-done", "", "file created once the stderr flood is written")
	failStart := flag.String("fail-start", "", "before serving, write this text (a Go-quoted string is unquoted first) to stderr and exit with status 1, as a plugin that cannot start does")
	flag.Parse()
	if u, err := strconv.Unquote(p.say); err == nil {
		p.say = u
	}
	if *failStart != "" {
		if u, err := strconv.Unquote(*failStart); err == nil {
			*failStart = u
		}
		fmt.Fprintln(stderr, *failStart)
		os.Exit(1)
	}
	if *floodMB > 0 {
		go flood(*floodMB, *floodDone)
	}
	if *dumpEnv != "" {
		if err := os.WriteFile(*dumpEnv, []byte(strings.Join(os.Environ(), "\x00")), 0o600); err != nil {
			fmt.Fprintln(stderr, "dump-env:", err)
			os.Exit(2)
		}
	}
	if *dumpStdin != "" {
		in, _ := io.ReadAll(io.LimitReader(os.Stdin, 1024))
		if err := os.WriteFile(*dumpStdin, in, 0o600); err != nil {
			fmt.Fprintln(stderr, "dump-stdin:", err)
			os.Exit(2)
		}
	}
	if *holder != "" {
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = ownSession(true)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(stderr, "spawn-stdout-holder:", err)
			os.Exit(2)
		}
		if err := os.WriteFile(*holder, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			fmt.Fprintln(stderr, "spawn-stdout-holder:", err)
			os.Exit(2)
		}
	}
	if *orphan != "" {
		if err := spawnOrphan(*orphan, *orphanOutput); err != nil {
			fmt.Fprintln(stderr, "spawn-orphan:", err)
			os.Exit(2)
		}
	}
	if *spawn != "" {
		if err := spawnChildren(*spawn); err != nil {
			fmt.Fprintln(stderr, "spawn:", err)
			os.Exit(2)
		}
	}
	if p.garbage {
		p.spew()
	}
	opts := sdk.ServeOpts{Close: closer{p}}
	if p.beforeComp != "off" {
		opts.BeforeCompact = sdk.BeforeCompactFunc(p.onBeforeCompact)
	}
	if p.compacting != "off" {
		opts.Compacting = sdk.CompactingFunc(p.onCompacting)
	}
	if p.compactNote != "off" {
		opts.Compact = sdk.CompactFunc(p.onCompact)
	}
	if p.beforeTree != "off" {
		opts.BeforeTree = sdk.BeforeTreeFunc(p.onBeforeTree)
	}
	if p.treeNote != "off" {
		opts.Tree = sdk.TreeFunc(p.onTree)
	}
	sdk.ServePlugin(opts, sdk.WithName(p.name), sdk.WithVersion("1.2.3"))
}

// closer is the plugin's Close: the host's Shutdown is recorded.
type closer struct{ p *plugin }

func (c closer) Close() error { return c.p.note("closed", nil) }

// flood writes mib MiB to stderr as fast as the host reads it, then
// creates done.
func flood(mib int, done string) {
	line := []byte(strings.Repeat("flood ", 170) + "\n") // ~1 KiB
	for written := 0; written < mib<<20; written += len(line) {
		if _, err := stderr.Write(line); err != nil {
			return
		}
	}
	if done != "" {
		_ = os.WriteFile(done, nil, 0o644)
	}
}

// spawnChildren starts `sleep` twice: once in the plugin's process group,
// once in a session of its own, as a daemonising helper would. The pids go
// to file, written whole once both run.
func spawnChildren(file string) error {
	var pids []string
	for _, setsid := range []bool{false, true} {
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = ownSession(setsid)
		if err := cmd.Start(); err != nil {
			return err
		}
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
		go func() { _ = cmd.Wait() }()
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(pids, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// spawnOrphan double-forks, as a daemon does: a shell starts `sleep` in a
// session of its own and exits, so the sleep is re-parented away from the
// plugin — to init, or to the nearest subreaper. Its pid goes to file.
// With keepOutput the sleep keeps the plugin's stdout and stderr, as a
// careless daemon does; otherwise they go to /dev/null.
func spawnOrphan(file string, keepOutput bool) error {
	script := "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!"
	var extra []*os.File
	if keepOutput {
		// The shell's stdout carries the pid back; the sleep gets the
		// plugin's own through fds 3 and 4.
		script = "setsid sleep 600 </dev/null >&3 2>&4 3>&- 4>&- & echo $!"
		extra = []*os.File{os.Stdout, os.Stderr}
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.ExtraFiles = extra
	out, err := cmd.Output()
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func (p *plugin) spew() {
	fmt.Fprintln(stderr, "\x00\xff garbage \x1b[2J not json {")
	fmt.Fprintln(stderr, `{"@level":"info","@message":{"not":"a string"},"k":1}`)
	fmt.Fprintln(stderr, `{"@level":["odd"],"@message":12345}`)
	fmt.Fprintln(stderr, `{"@message":null,"@timestamp":"yesterday"}`)
	fmt.Fprintf(stderr, "%s\n", make([]byte, 200<<10)) // a huge line of NULs
	fmt.Fprintln(os.Stderr, `{"@message":[1,2,3]} via the stdio stream`)
}

func (p *plugin) onBeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	if p.garbage {
		p.spew()
	}
	if p.say != "" {
		fmt.Fprintln(stderr, "[WARN] "+p.say)
		line, _ := json.Marshal(map[string]any{"@level": "warn", "@message": p.say, "k" + p.say: p.say, "nested": map[string]any{"v": p.say}})
		fmt.Fprintf(stderr, "%s\n", line)
		if err := sdk.Host(ctx).Log(ctx, hclog.Warn, p.say, "said", p.say); err != nil {
			return nil, err
		}
	}
	switch p.beforeComp {
	case "cancel":
		return &sdk.BeforeCompactResult{Cancel: true, CancelReason: p.name + " says no" + p.say}, nil
	case "compact":
		return p.compaction(ev, p.name+" summary"), nil
	case "echo":
		// Sends the first message back as the summary: a large payload
		// both ways.
		if len(ev.Preparation.MessagesToSummarize) == 0 {
			return nil, errors.New("echo: no message")
		}
		return p.compaction(ev, string(ev.Preparation.MessagesToSummarize[0])), nil
	case "invalid":
		return &sdk.BeforeCompactResult{Compaction: &sdk.Compaction{Summary: "", FirstKeptEntryID: "not-on-the-path"}}, nil
	case "error":
		return nil, errors.New(p.name + " failed on purpose")
	case "panic":
		panic(p.name + " panics on purpose")
	case "crash":
		// A panic off the handler's goroutine: nothing recovers it, and
		// the Go runtime ends the process with its stack on stderr.
		go func() { panic(p.name + " crashes on purpose") }()
		select {}
	case "hang":
		select {} // ignore the deadline on purpose
	case "exit":
		os.Exit(3)
	case "exit-once":
		if _, err := os.Stat(p.marker); errors.Is(err, os.ErrNotExist) {
			_ = os.WriteFile(p.marker, []byte("crashed once\n"), 0o644)
			os.Exit(3)
		}
		return p.compaction(ev, p.name+" after restart"), nil
	case "host":
		return p.viaHost(ctx, ev)
	case "host-deep":
		return p.deepEstimate(ctx, ev)
	case "steal":
		return p.steal(ctx, ev)
	case "page":
		return p.page(ctx, ev)
	case "flood":
		return p.flood(ctx, ev)
	case "leave":
		return p.leave(ctx, ev)
	case "huge-details":
		r := p.compaction(ev, p.name+" summary")
		r.Compaction.Details = hugeJSON(20 << 20)
		return r, nil
	}
	return nil, nil
}

func (p *plugin) compaction(ev *sdk.BeforeCompactEvent, summary string) *sdk.BeforeCompactResult {
	return &sdk.BeforeCompactResult{Compaction: &sdk.Compaction{
		Summary:          summary,
		FirstKeptEntryID: ev.Preparation.FirstKeptEntryID,
		TokensBefore:     ev.Preparation.TokensBefore,
		Details:          json.RawMessage(`{"by":"` + p.name + `"}`),
	}}
}

// viaHost builds its summary from the host: the session's entries, a token
// estimate and a completion on the host's summarizer.
func (p *plugin) viaHost(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	host := sdk.Host(ctx)
	entries, err := host.ReadEntries(ctx, sdk.ReadEntriesRequest{SessionID: ev.SessionID, PathOnly: true})
	if err != nil {
		return nil, err
	}
	tokens, err := host.EstimateTokens(ctx, entries)
	if err != nil {
		return nil, err
	}
	resp, err := host.Complete(ctx, sdk.CompleteRequest{SystemPrompt: "summarize", Prompt: fmt.Sprintf("%d entries, %v tokens", len(entries), tokens), MaxTokens: 100})
	if err != nil {
		return nil, err
	}
	if err := host.Log(ctx, hclog.Info, "summarized through the host", "entries", len(entries)); err != nil {
		return nil, err
	}
	return p.compaction(ev, resp.Text), nil
}

// leave starts 4 completions on the host under a context of its own that
// never ends, and returns without waiting for them: a plugin leaving work
// running on the host's model after its call. It waits until the host has
// them (the test host counts them in) so that they run when it returns.
func (p *plugin) leave(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	host := sdk.Host(ctx)
	lctx := context.WithoutCancel(ctx)
	for range 4 {
		go func() { _, _ = host.Complete(lctx, sdk.CompleteRequest{Prompt: "left running", MaxTokens: 10}) }()
	}
	if p.marker != "" {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if b, _ := os.ReadFile(p.marker); len(b) >= 4 {
				break
			}
		}
	}
	return p.compaction(ev, "left"), nil
}

// flood asks the host for 32 completions at once, then 32 more one
// after the other, and reports how many of each the host answered.
func (p *plugin) flood(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	host := sdk.Host(ctx)
	complete := func() error {
		_, err := host.Complete(ctx, sdk.CompleteRequest{Prompt: "again", MaxTokens: 10})
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	together := 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if complete() == nil {
				mu.Lock()
				together++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	inTurn, lastErr := 0, error(nil)
	for range 32 {
		if err := complete(); err != nil {
			lastErr = err
			continue
		}
		inTurn++
	}
	return p.compaction(ev, fmt.Sprintf("together=%d in-turn=%d last error: %v", together, inTurn, lastErr)), nil
}

// page reports what it was sent and pages the whole path from the host,
// seven entries at a time.
func (p *plugin) page(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	host := sdk.Host(ctx)
	paged := 0
	for {
		entries, err := host.ReadEntries(ctx, sdk.ReadEntriesRequest{PathOnly: true, LeafID: ev.LeafID, Offset: paged, Limit: 7})
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			break
		}
		paged += len(entries)
	}
	return &sdk.BeforeCompactResult{Cancel: true, CancelReason: fmt.Sprintf("truncated=%v sent=%d length=%d paged=%d labels=%d",
		ev.PathTruncated, len(ev.PathEntries), ev.PathLength, paged, len(ev.Labels))}, nil
}

// steal reads its own session, then another one (-other), and reports both
// answers in its summary; after returning it tries its own session again
// with the same host API and appends that answer to -record.
func (p *plugin) steal(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	host := sdk.Host(ctx)
	own, errOwn := host.ReadEntries(ctx, sdk.ReadEntriesRequest{SessionID: ev.SessionID})
	_, errOther := host.ReadEntries(ctx, sdk.ReadEntriesRequest{SessionID: p.other})
	later := context.WithoutCancel(ctx)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, err := host.ReadEntries(later, sdk.ReadEntriesRequest{SessionID: ev.SessionID})
		_ = p.note("later", fmt.Sprint(err))
	}()
	return p.compaction(ev, fmt.Sprintf("own: %d entries, %v; other: %v", len(own), errOwn, errOther)), nil
}

// deepEstimate sends the host a message nested 30 million levels deep, then
// a normal one, and reports both answers in its summary: the host must
// refuse the first and still be there for the second.
func (p *plugin) deepEstimate(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	host := sdk.Host(ctx)
	deep := `{"role":"user","content":` + strings.Repeat("[", 30_000_000) + `}`
	_, err := host.EstimateTokens(ctx, []json.RawMessage{json.RawMessage(deep)})
	n, err2 := host.EstimateTokens(ctx, []json.RawMessage{json.RawMessage(`{"role":"user","content":"12345678"}`)})
	return p.compaction(ev, fmt.Sprintf("deep: %v; then: %v %v", err, n, err2)), nil
}

func (p *plugin) onCompacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	switch p.compacting {
	case "context":
		return &sdk.CompactingResult{
			Context:      []string{p.name + ": " + fmt.Sprint(len(ev.Messages)) + " messages"},
			Prompt:       p.prompt,
			PreserveData: json.RawMessage(`{"from":"` + p.name + `"}`),
		}, nil
	case "inject":
		// context, and a message to keep word for word after the compaction
		return &sdk.CompactingResult{
			Context:  []string{p.name + ": " + fmt.Sprint(len(ev.Messages)) + " messages"},
			Messages: []sdk.InjectedMessage{{Type: "note", Content: p.name + " keeps this word for word", Display: true}},
		}, nil
	case "error":
		return nil, errors.New(p.name + " failed on purpose")
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	case "huge-preserve":
		return &sdk.CompactingResult{PreserveData: hugeJSON(20 << 20)}, nil
	case "deep-preserve":
		return &sdk.CompactingResult{PreserveData: json.RawMessage(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))}, nil
	case "huge-context":
		return &sdk.CompactingResult{Context: []string{strings.Repeat("c", 20<<20)}}, nil
	}
	return nil, nil
}

// hugeJSON is a JSON string value of about n bytes.
func hugeJSON(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n) + `"`)
}

func (p *plugin) note(event string, v any) error {
	if p.record == "" {
		return nil
	}
	p.recordMu.Lock()
	defer p.recordMu.Unlock()
	f, err := os.OpenFile(p.record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	b, _ := json.Marshal(v)
	_, err = fmt.Fprintf(f, "%s %s %s\n", p.name, event, b)
	return err
}

func (p *plugin) onCompact(ctx context.Context, ev *sdk.CompactEvent) error {
	switch p.compactNote {
	case "hang":
		select {}
	case "error":
		return errors.New(p.name + " failed on purpose")
	}
	return p.note(string(sdk.EventCompact), ev)
}

func (p *plugin) onBeforeTree(ctx context.Context, ev *sdk.BeforeTreeEvent) (*sdk.BeforeTreeResult, error) {
	switch p.beforeTree {
	case "cancel":
		return &sdk.BeforeTreeResult{Cancel: true, CancelReason: p.name + " says no"}, nil
	case "summary":
		return &sdk.BeforeTreeResult{Summary: &sdk.BranchSummary{Summary: p.name + " branch summary"}, Label: p.name}, nil
	case "invalid":
		return &sdk.BeforeTreeResult{Summary: &sdk.BranchSummary{Summary: " "}}, nil
	}
	return nil, nil
}

func (p *plugin) onTree(ctx context.Context, ev *sdk.TreeEvent) error {
	return p.note(string(sdk.EventTree), ev)
}
