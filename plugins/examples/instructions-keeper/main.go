// Command instructions-keeper is an example Pith plugin for
// session.compacting. A project's standing instructions (AGENTS.md,
// CLAUDE.md: "run make test before committing", "never touch vendor/") are
// usually given once, early in a session — exactly the part a compaction
// rewrites. The plugin hands them to the summarizer as context lines on every
// compaction, so the summary restates them, and also returns them as a
// message that the host puts verbatim after the compaction (customType
// "instructions-keeper/instructions"; --no-inject turns that off), so they
// survive word for word.
//
// Where the instructions come from, first match wins:
//
//   - --file PATH (repeatable): exactly those files;
//   - --dir DIR: AGENTS.md and CLAUDE.md in DIR;
//   - otherwise AGENTS.md and CLAUDE.md in the session's workspace, as the
//     host names it in the event (Workspace): the directory of the
//     session header's cwd when the host reads files there — a pith serve
//     daemon only under its server.workspaceRoot, since its clients choose
//     their sessions' cwd. The header's cwd itself is never used, and the
//     files are opened inside the workspace (no link leading out).
//
// Whatever names them, a file denied by Pith's built-in workspace deny
// list (a private key by name, by its real path with links resolved, or
// by a key's header or an API token in its content; .ssh, .aws, .env*,
// .netrc, ...:
// sdk.DeniedPath, sdk.DeniedContent) is not read: an AGENTS.md that is a link to
// ~/.ssh/id_ed25519 would hand the key to the summarizer.
//
// Each non-empty line (a bullet with its wrapped continuation lines counts as
// one) becomes one context line, clipped to --max-chars; at most --max-lines
// are sent. The first line says where they come from.
//
//	plugins:
//	  - name: instructions-keeper
//	    path: ./bin/plugins/instructions-keeper
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/pith-dev/pith/sdk"
)

// instructionFiles are looked for in a directory, in this order.
var instructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxFileBytes bounds how much of one instruction file is read: standing
// instructions are short, and a huge file must not flood the summarizer.
const maxFileBytes = 256 << 10

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	fs := flag.NewFlagSet("instructions-keeper", flag.ContinueOnError)
	k := &keeper{}
	fs.Var((*stringList)(&k.files), "file", "instruction file to keep (repeatable); replaces the AGENTS.md/CLAUDE.md lookup")
	fs.StringVar(&k.dir, "dir", "", "directory holding AGENTS.md/CLAUDE.md; default the session's workspace, as the host names it")
	fs.IntVar(&k.maxLines, "max-lines", 60, "most instruction lines sent per compaction")
	fs.IntVar(&k.maxChars, "max-chars", 300, "longest instruction line, in characters, before it is clipped")
	fs.BoolVar(&k.noInject, "no-inject", false, "only steer the summary; do not also put the instructions verbatim after the compaction")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if k.maxLines < 1 || k.maxChars < 20 {
		fmt.Fprintln(os.Stderr, "instructions-keeper: --max-lines must be at least 1 and --max-chars at least 20")
		os.Exit(2)
	}
	sdk.ServePlugin(sdk.ServeOpts{Compacting: k}, sdk.WithName("instructions-keeper"), sdk.WithVersion("1.0.0"))
}

// keeper finds and formats the instructions.
type keeper struct {
	files    []string
	dir      string
	maxLines int
	maxChars int
	noInject bool
}

// Compacting adds the instructions as context lines and as one message
// injected after the compaction.
func (k *keeper) Compacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	log := sdk.Logger().With("session", ev.SessionID)
	paths, where, err := k.sources(ev.Workspace)
	if err != nil {
		// A missing source is the user's setup, not a failed compaction.
		log.Warn("no instructions to keep", "error", err)
		return nil, nil
	}
	var (
		found  []source
		names  []string
		lines  int
		failed int
	)
	open := openRegular
	if where != "" {
		// In a directory, files are opened inside it: an AGENTS.md that
		// is a link may point at CLAUDE.md, not out of the project.
		root, err := os.OpenRoot(where)
		if err != nil {
			log.Warn("no instructions to keep", "error", err)
			return nil, nil
		}
		defer root.Close()
		if k.dir == "" {
			// The host's workspace, named by its real path: opened
			// through a link swapped in since the host checked it, it
			// would be another directory (another tenant's).
			if err := sameDir(root, where); err != nil {
				log.Warn("no instructions to keep", "error", err)
				return nil, nil
			}
		}
		open = func(p string) (*os.File, error) { return openRegularIn(root, filepath.Base(p)) }
	}
	for _, p := range paths {
		items, err := readInstructions(p, k.maxChars, open)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if where == "" { // named by --file: the user expects it to exist
				log.Warn("instruction file not found", "path", p)
			}
			continue
		case err != nil:
			log.Warn("cannot read instruction file", "path", p, "error", err)
			failed++
			continue
		case len(items) == 0:
			continue
		}
		found = append(found, source{path: p, items: items})
		names = append(names, displayName(p, where))
		lines += len(items)
	}
	if len(found) == 0 {
		if failed == 0 {
			log.Debug("no instruction files found", "looked-in", where)
		}
		return nil, nil
	}
	header := fmt.Sprintf("Standing project instructions from %s", strings.Join(names, " and "))
	if where != "" {
		header += " in " + where
	}
	header += " (still in force after this compaction; keep them in the summary):"
	out := []string{header}
	budget := k.maxLines
	for _, s := range found {
		if len(found) > 1 && budget > 0 {
			out = append(out, displayName(s.path, where)+":")
		}
		for _, it := range s.items {
			if budget == 0 {
				break
			}
			out = append(out, it)
			budget--
		}
	}
	if omitted := lines - (k.maxLines - budget); omitted > 0 {
		out = append(out, fmt.Sprintf("(%d more instruction lines omitted; read %s for all of them)", omitted, strings.Join(names, " and ")))
	}
	log.Debug("keeping instructions", "files", len(found), "lines", len(out)-1)
	res := &sdk.CompactingResult{Context: out}
	if !k.noInject {
		// The summary restates them in its own words; the message after
		// the compaction keeps them word for word.
		text := "Standing project instructions (re-read after the compaction above; still in force):\n\n" +
			strings.Join(out[1:], "\n")
		res.Messages = []sdk.InjectedMessage{{Type: "instructions", Content: text}}
	}
	return res, nil
}

type source struct {
	path  string
	items []string
}

// displayName is the path as the header shows it: relative to the directory
// it was found in, absolute otherwise.
func displayName(path, dir string) string {
	if dir != "" && filepath.Dir(path) == filepath.Clean(dir) {
		return filepath.Base(path)
	}
	return path
}

// sources returns the files to read and the directory they are named
// relative to ("" for --file): --file, else --dir, else the workspace
// the host named.
func (k *keeper) sources(workspace string) ([]string, string, error) {
	if len(k.files) > 0 {
		return k.files, "", nil
	}
	dir := k.dir
	if dir == "" {
		if workspace == "" {
			return nil, "", errors.New("the host names no workspace for this session (pith serve reads workspaces only under server.workspaceRoot); pass --dir or --file")
		}
		dir = workspace
	}
	var paths []string
	var first os.FileInfo
	for _, name := range instructionFiles {
		p := filepath.Join(dir, name)
		info, err := os.Stat(p)
		if err != nil {
			paths = append(paths, p) // reported as missing by the reader
			continue
		}
		// CLAUDE.md is often a symlink to AGENTS.md: send the lines once.
		if first != nil && os.SameFile(first, info) {
			continue
		}
		if first == nil {
			first = info
		}
		paths = append(paths, p)
	}
	return paths, dir, nil
}

// readInstructions reads one file, opened with open, into instruction
// items.
func readInstructions(path string, maxChars int, open func(string) (*os.File, error)) ([]string, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if sdk.DeniedContent(data) {
		return nil, fmt.Errorf("%s: %w", path, sdk.ErrDenied)
	}
	return parseInstructions(string(data), maxChars), nil
}

// openRegular opens path for reading if it is a regular file (through
// symlinks: CLAUDE.md is often one). The project directory comes from the
// session, so its files are whatever the repository holds: an AGENTS.md that
// is a FIFO would block the open until the host's timeout, and a device
// could be read from forever. The open does not wait (O_NONBLOCK, which a
// regular file ignores), and the check is made on the file opened, so a
// swap after a check by name cannot get past it.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// openRegularIn is openRegular for name inside root: links are followed
// only while they stay in it.
func openRegularIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, filepath.Join(root.Name(), name))
}

// sameDir checks that root, opened by the name real, is the directory of
// that real path and was not reached through a link.
func sameDir(root *os.Root, real string) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	got, err := realPath(d)
	if err != nil {
		return err
	}
	if got != filepath.Clean(real) {
		return fmt.Errorf("the workspace %s now leads to %s; not read", real, got)
	}
	return nil
}

// regular returns f if it is a regular file that the built-in deny list
// does not deny by its real path (links resolved: what was opened), else
// closes it.
func regular(f *os.File, path string) (*os.File, error) {
	real, err := realPath(f)
	if err != nil || !filepath.IsAbs(real) {
		real, err = filepath.EvalSymlinks(path)
	}
	if err != nil || sdk.DeniedPath(real) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, sdk.ErrDenied)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, info.Mode().Type())
	}
	return f, nil
}

// parseInstructions turns Markdown into one item per instruction: blank
// lines, code fences and HTML comments are dropped; a bullet's wrapped
// continuation lines are joined to it; list markers become "- ".
func parseInstructions(text string, maxChars int) []string {
	var items []string
	inComment, inBullet := false, false
	for _, raw := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line := strings.TrimSpace(raw)
		if inComment {
			if strings.Contains(line, "-->") {
				inComment = false
			}
			continue
		}
		if strings.HasPrefix(line, "<!--") {
			inComment = !strings.Contains(line, "-->")
			continue
		}
		if line == "" || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") || isRule(line) {
			inBullet = false
			continue
		}
		if rest, ok := bulletText(line); ok {
			items = append(items, "- "+rest)
			inBullet = true
			continue
		}
		indented := raw != "" && (raw[0] == ' ' || raw[0] == '\t')
		if inBullet && indented && !strings.HasPrefix(line, "#") {
			items[len(items)-1] += " " + line
			continue
		}
		inBullet = false
		items = append(items, line)
	}
	for i, it := range items {
		items[i] = clip(it, maxChars)
	}
	return items
}

// bulletText recognises "- x", "* x", "+ x" and "1. x" / "1) x" items.
func bulletText(line string) (string, bool) {
	if len(line) > 2 && strings.ContainsRune("-*+", rune(line[0])) && line[1] == ' ' {
		return strings.TrimSpace(line[2:]), true
	}
	i := 0
	for i < len(line) && i < 4 && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' ' {
		return strings.TrimSpace(line[i+2:]), true
	}
	return "", false
}

// isRule reports a Markdown horizontal rule (---, ***, ___).
func isRule(line string) bool {
	if len(line) < 3 {
		return false
	}
	c := line[0]
	if c != '-' && c != '*' && c != '_' {
		return false
	}
	return strings.Trim(line, string(c)+" ") == ""
}

// clip shortens s to at most max characters, marking the cut.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max-1]), " ") + "…"
}
