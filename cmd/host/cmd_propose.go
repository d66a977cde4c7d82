package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/propose"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/spf13/cobra"
)

type proposeFlags struct {
	config      string
	verbose     bool
	honourPiCut bool
	workspace   string
	provider    providerFlags
}

func newProposeCommand() *cobra.Command {
	var f proposeFlags
	cmd := &cobra.Command{
		Use:   "propose compact|navigate|notify-compact|notify-tree FILE",
		Short: "Run a compaction or navigation for pi, which writes the session itself",
		Long: `For a program that owns a session file and is its only writer (pi, through
Pith's extension; see docs/pi.md). Runs Pith's whole pipeline on FILE read-only
— the plugins, the summarizer or the explore worker, the checks — and prints
what the owner should write; it writes nothing to FILE or beside it.

Reads one JSON request on stdin (empty means all defaults) and writes NDJSON
events on stdout, one per line: "progress" and "warning" events as the work
goes, then exactly one "result" (or one "error", with a non-zero exit code).
stderr is for people.

  compact         the compaction: {"preparation":{"firstKeptEntryId":…},
                  "leafId","customInstructions","reason","model":{…}}
  navigate        a tree navigation's branch summary: {"targetId","oldLeafId",
                  "summarize","customInstructions","replaceInstructions",
                  "label","model":{…}}
  notify-compact  session_compact to the plugins: {"compactionEntry":{…},
                  "fromExtension":true}
  notify-tree     session_tree to the plugins: {"newLeafId","oldLeafId",
                  "summaryEntry":{…},"fromExtension":true}

Pith's own preparation decides the cut; --honour-pi-cut (or
compaction.honourPiCut) keeps from pi's firstKeptEntryId instead. SIGTERM or
SIGINT stops the work at once.`,
		Args: positional([]arg{{"KIND", "compact, navigate, notify-compact or notify-tree"}, {"FILE", "the session file"}}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runPropose(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], args[1], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "configuration file: settings, summarizer and plugins (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log what the engine and the plugins do (on stderr)")
	fl.StringVar(&f.workspace, "workspace", "", "also read the session's workspace (the explore worker's file tools, compaction.rehydrate) when it is DIR or below it; without it only one under the current directory (pi's, when the extension runs it) or a workspace.roots directory is read")
	fl.BoolVar(&f.honourPiCut, "honour-pi-cut", false, "keep from pi's firstKeptEntryId instead of Pith's own cut (default: compaction.honourPiCut)")
	f.provider.register(cmd)
	return cmd
}

// ndjson writes events one per line; engine events arrive on the
// operation's goroutine, so writes are serialized.
type ndjson struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newNDJSON(w io.Writer) *ndjson {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &ndjson{enc: enc}
}

func (n *ndjson) emit(e propose.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_ = n.enc.Encode(e) // a closed stdout: the owner is gone, nothing to tell
}

// proposeEvents are the hook events each operation may fire.
func proposeEvents(op string) []hooks.EventID {
	switch op {
	case propose.OpCompact:
		return []hooks.EventID{hooks.EventBeforeCompact, hooks.EventCompacting}
	case propose.OpNavigate:
		return []hooks.EventID{hooks.EventBeforeTree}
	case propose.OpNotifyCompact:
		return []hooks.EventID{hooks.EventCompact}
	case propose.OpNotifyTree:
		return []hooks.EventID{hooks.EventTree}
	}
	return nil
}

func runPropose(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, op, path string, f proposeFlags) error {
	out := newNDJSON(stdout)
	fail := func(err error) error {
		msg := err.Error()
		if ctx.Err() != nil {
			msg = "interrupted; nothing was written"
			err = fmt.Errorf("%s: %w; nothing was written", path, ctx.Err())
		}
		out.emit(propose.Event{Type: propose.TypeError, Message: msg})
		return err
	}
	data, err := io.ReadAll(io.LimitReader(stdin, propose.MaxRequestBytes+1))
	if err != nil {
		return fail(fmt.Errorf("read the request: %w", err))
	}
	req, err := propose.Decode(op, data)
	if err != nil {
		return fail(usageError{err})
	}
	log := cliLogger(stderr, f.verbose)
	rt, err := startRuntime(ctx, path, "", f.config, f.workspace, f.provider, proposeEvents(op), log, func() (*openedSession, error) {
		return openSnapshot(path, log)
	})
	if err != nil {
		return fail(err)
	}
	defer rt.close()
	opt := propose.Options{HonourPiCut: rt.cfg.Compaction.HonourPiCut || f.honourPiCut}
	res, err := propose.Run(ctx, rt.engine, req, opt, out.emit)
	if err != nil {
		if errors.Is(err, engine.ErrAborted) && ctx.Err() != nil {
			err = ctx.Err()
		}
		return fail(fmt.Errorf("%s: %w; nothing was written", path, err))
	}
	out.emit(res)
	return nil
}

// openSnapshot reads the session file whole, with no lock and no write
// handle: its owner may be appending to it meanwhile, and a line it has
// not finished is left out.
func openSnapshot(path string, log hclog.Logger) (*openedSession, error) {
	f, err := session.Load(path)
	if err != nil {
		return nil, err
	}
	session.LogWarnings(log, path, f.Warnings)
	return &openedSession{Backend: session.NewSnapshot(path, f), close: func() {}}, nil
}
