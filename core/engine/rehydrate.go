package engine

import (
	"errors"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/tidwall/gjson"
)

// RehydrateCustomType is the customType of the message that puts recently
// used files back after a compaction.
const RehydrateCustomType = "pith.rehydrate"

// Rehydrate re-reads the files most recently read or changed in the part a
// compaction summarizes and appends their current content after it, as
// one custom_message (compaction.rehydrate). Files 0 turns it off.
type Rehydrate struct {
	// Files is how many of the most recent files are re-read.
	Files int
	// MaxTokensPerFile: a larger file comes back as its path only.
	MaxTokensPerFile int
	// TotalTokens bounds the contents of all files together; a file that
	// does not fit what is left comes back as its path only.
	TotalTokens int
}

// rehydrate builds the message for prep from the session's workspace (the
// header's cwd, every read confined to it by os.Root), or nil when it is
// off, there is nothing to re-read, or the workspace cannot be opened or
// is not to be read (logged: the compaction itself does not depend on it).
func (s *Session) rehydrate(st Settings, prep *compaction.Preparation) *workspace.Built {
	rh := st.Rehydrate
	if rh.Files <= 0 {
		return nil
	}
	msgs := append(append([]session.Message{}, prep.MessagesToSummarize...), prep.TurnPrefixMessages...)
	files := recentFiles(msgs, rh.Files)
	if len(files) == 0 {
		return nil
	}
	ws := s.openWorkspace("rehydrate: no files re-read")
	if ws == nil {
		return nil
	}
	defer ws.Close()
	return ws.BuildMessage(files, nil, workspace.BuildOptions{
		BudgetTokens:  rh.TotalTokens,
		FileCapTokens: rh.MaxTokensPerFile,
		CustomType:    RehydrateCustomType,
		Intro: "Current content of the files most recently read or changed before the compaction above " +
			"(re-read from " + ws.Dir() + " after it; paths are relative to it).",
	})
}

// recentFiles are the paths of read, write and edit tool calls in msgs,
// newest first, each once, at most n.
func recentFiles(msgs []session.Message, n int) []string {
	var out []string
	seen := map[string]bool{}
	for i := len(msgs) - 1; i >= 0 && len(out) < n; i-- {
		if msgs[i].Role != session.RoleAssistant {
			continue
		}
		blocks := gjson.GetBytes(msgs[i].Raw, "content").Array()
		for j := len(blocks) - 1; j >= 0 && len(out) < n; j-- {
			b := blocks[j]
			if b.Get("type").Str != "toolCall" {
				continue
			}
			switch b.Get("name").Str {
			case "read", "write", "edit":
			default:
				continue
			}
			p := b.Get("arguments.path")
			if p.Type != gjson.String || p.Str == "" || seen[p.Str] {
				continue
			}
			seen[p.Str] = true
			out = append(out, p.Str)
		}
	}
	return out
}

// headerWorkspace opens the session's workspace — its header's cwd —
// with the Opener in force; nil and no error when the header names none.
func (s *Session) headerWorkspace() (ws *workspace.Workspace, cwd string, err error) {
	if f := s.store.File(); f != nil {
		cwd = f.Header.Cwd
	}
	if cwd == "" {
		return nil, "", nil
	}
	ws, err = s.opts.Workspaces(cwd, workspace.Options{})
	return ws, cwd, err
}

// openWorkspace is headerWorkspace for reading files: nil, logged with
// what follows from it, when there is none, it may not be read or it
// cannot be opened.
func (s *Session) openWorkspace(consequence string) *workspace.Workspace {
	ws, cwd, err := s.headerWorkspace()
	switch {
	case errors.Is(err, workspace.ErrNoWorkspaces):
		s.log.Debug("the session's workspace is not read here; "+consequence, "cwd", cwd)
		return nil
	case err != nil:
		s.log.Warn("the session's workspace cannot be opened; "+consequence, "cwd", cwd, "error", err)
		return nil
	}
	return ws
}

// workspaceDir is the session's workspace directory when it may be read
// here (the Opener in force opens it), by its real path, or "": what the
// hooks are told, so that a plugin reading project files is held to the
// same rule. Not being able to is no failure of anything yet (a plugin
// that needs files says so), so it is only a debug line.
func (s *Session) workspaceDir() string {
	ws, cwd, err := s.headerWorkspace()
	if ws == nil {
		if err != nil {
			s.log.Debug("plugins are told of no workspace", "cwd", cwd, "error", err)
		}
		return ""
	}
	defer ws.Close()
	// Its real path, which the plugin can check what it opens against:
	// Dir may pass through links that could be swapped before it does.
	real, err := ws.RealDir()
	if err != nil {
		s.log.Debug("plugins are told of no workspace", "cwd", cwd, "error", err)
		return ""
	}
	return real
}
