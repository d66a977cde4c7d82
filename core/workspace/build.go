package workspace

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

// DefaultCustomType is the customType of a built message when
// BuildOptions leaves it empty.
const DefaultCustomType = "pith.workspace"

// Reference is a file worth knowing about without its content.
type Reference struct {
	Path string `json:"path"`
	Note string `json:"note,omitempty"`
}

// BuildOptions configure BuildMessage.
type BuildOptions struct {
	// BudgetTokens bounds the estimated tokens of all file contents put in
	// the message together (chars/4, as everywhere in Pith). Files are taken
	// in the order given; one that does not fit what is left is listed by
	// path only, and later, smaller files may still fit.
	BudgetTokens int
	// FileCapTokens bounds one file's content; a larger file is listed by
	// path only. 0 means no cap of its own (the budget still applies).
	FileCapTokens int
	// CustomType is the entry's customType; empty means DefaultCustomType.
	CustomType string
	// Intro is the first paragraph of the message; empty means a sentence
	// saying these are current workspace files.
	Intro string
	// Display is the entry's display flag (shown to the user in pi's UI).
	Display bool
}

// FileStatus is what became of one requested file.
type FileStatus struct {
	Path string `json:"path"`
	// Included: the content is in the message; Tokens is its estimate.
	Included bool `json:"included"`
	Tokens   int  `json:"tokens"`
	// Reason says why a file is listed by path only ("over budget",
	// "over the per-file cap", or the read error).
	Reason string `json:"reason,omitempty"`
}

// Built is a message ready to append, and the account of what is in it.
type Built struct {
	// Draft is a custom_message entry; append it with a session.Backend's Append.
	Draft session.Draft
	// Text is the message's content.
	Text string
	// Files has one status per distinct requested file, in request order.
	Files []FileStatus
	// References are the references as written (paths made relative).
	References []Reference
	// FileTokens is the estimate of the included contents; Tokens is the
	// estimate of the whole message text.
	FileTokens, Tokens int
}

// customMessage is the entry body of a built message (docs/behaviour.md §1).
type customMessage struct {
	CustomType string       `json:"customType"`
	Content    string       `json:"content"`
	Display    bool         `json:"display"`
	Details    builtDetails `json:"details"`
}

type builtDetails struct {
	Files      []FileStatus `json:"files"`
	References []Reference  `json:"references"`
}

// BuildMessage reads files (current content, whole — a file that does not
// fit whole is never cut) and lists refs, and lays them out as one
// custom_message. It returns nil when there is nothing to say (no files and
// no references). Paths are resolved as Read resolves them; a file that
// cannot be read is listed by path with the reason, never an error for the
// whole message.
func (w *Workspace) BuildMessage(files []string, refs []Reference, o BuildOptions) *Built {
	b := &Built{}
	var contents strings.Builder
	var pathsOnly []FileStatus
	seen := map[string]bool{}
	left := max(o.BudgetTokens, 0)
	for _, p := range files {
		rel, err := w.Rel(p)
		if err != nil {
			rel = p
		}
		if seen[rel] {
			continue
		}
		seen[rel] = true
		st := FileStatus{Path: rel}
		text, n, reason := w.wholeFile(rel, err, o.FileCapTokens, left)
		if reason != "" {
			st.Reason = reason
			pathsOnly = append(pathsOnly, st)
			b.Files = append(b.Files, st)
			continue
		}
		st.Included, st.Tokens = true, n
		left -= n
		b.FileTokens += n
		b.Files = append(b.Files, st)
		fmt.Fprintf(&contents, "<file path=%q>\n%s", rel, text)
		if !strings.HasSuffix(text, "\n") {
			contents.WriteByte('\n')
		}
		contents.WriteString("</file>\n\n")
	}
	for _, r := range refs {
		if rel, err := w.Rel(r.Path); err == nil {
			r.Path = rel
		}
		if slices.ContainsFunc(b.References, func(x Reference) bool { return x.Path == r.Path }) {
			continue
		}
		b.References = append(b.References, r)
	}
	if len(b.Files) == 0 && len(b.References) == 0 {
		return nil
	}

	var t strings.Builder
	intro := o.Intro
	if intro == "" {
		intro = "Current content of workspace files selected for this context (read from " + w.dir + "; paths are relative to it)."
	}
	t.WriteString(intro + "\n\n")
	t.WriteString(contents.String())
	if len(pathsOnly) > 0 {
		t.WriteString("Files not included (read them yourself if needed):\n")
		for _, f := range pathsOnly {
			fmt.Fprintf(&t, "- %s (%s)\n", f.Path, f.Reason)
		}
		t.WriteString("\n")
	}
	if len(b.References) > 0 {
		t.WriteString("References:\n")
		for _, r := range b.References {
			if r.Note != "" {
				fmt.Fprintf(&t, "- %s — %s\n", r.Path, r.Note)
			} else {
				fmt.Fprintf(&t, "- %s\n", r.Path)
			}
		}
	}
	b.Text = strings.TrimRight(t.String(), "\n")
	b.Tokens = textTokens(b.Text)
	ct := o.CustomType
	if ct == "" {
		ct = DefaultCustomType
	}
	b.Draft = session.Draft{Type: "custom_message", Fields: customMessage{
		CustomType: ct,
		Content:    b.Text,
		Display:    o.Display,
		Details:    builtDetails{Files: nonNil(b.Files), References: nonNil(b.References)},
	}}
	return b
}

// wholeFile reads rel whole if it fits both bounds; otherwise reason says
// why it is listed by path only.
func (w *Workspace) wholeFile(rel string, relErr error, capTokens, left int) (text string, n int, reason string) {
	if relErr != nil {
		return "", 0, reasonOf(relErr)
	}
	// A token is 4 UTF-16 units and a unit at most 3 UTF-8 bytes, so a file
	// within the bound is at most 12 bytes a token: reading that much
	// decides without reading a huge file whole.
	bound, overBound := left, "over budget"
	if capTokens > 0 {
		bound, overBound = capTokens, "over the per-file cap"
	}
	f, err := w.Read(rel, ReadOptions{MaxBytes: max(1, bound*12)})
	if err != nil {
		return "", 0, reasonOf(err)
	}
	if f.Truncated || !f.EOF {
		return "", 0, overBound
	}
	n = textTokens(f.Content)
	switch {
	case capTokens > 0 && n > capTokens:
		return "", 0, "over the per-file cap"
	case n > left:
		return "", 0, "over budget"
	}
	return f.Content, n, ""
}

// reasonOf words a read error for the list of files not included.
func reasonOf(err error) string {
	for _, s := range []error{ErrDenied, ErrOutside, ErrNotExist, ErrNotRegular, ErrBinary} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return err.Error()
}

// textTokens is Pith's chars/4 estimate of a text, in UTF-16 units.
func textTokens(s string) int { return (tokens.Units(s) + 3) / 4 }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
