package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// An Opener opens the workspace a session's header names (its cwd). Who
// wrote the header decides which opener is right: a local user's own
// session may name any directory of theirs (Open); a session a client
// created through a daemon names whatever the client chose, so the
// daemon confines it to a root its operator gave (Within), or reads no
// workspace at all (None).
type Opener func(cwd string, opts Options) (*Workspace, error)

// ErrNoWorkspaces: workspace reads are off (a daemon without a
// workspace root).
var ErrNoWorkspaces = errors.New("workspace reads are off here")

// None is the Opener that opens no workspace.
func None(string, Options) (*Workspace, error) { return nil, ErrNoWorkspaces }

// Within is the Opener of workspaces inside root (an absolute
// directory): cwd must be root or a directory below it, named without
// climbing out with "..", and it is opened through an os.Root on root,
// so a symbolic link on the way that leads out of root is refused too.
// An empty root is None.
func Within(root string) Opener {
	if root == "" {
		return None
	}
	return func(cwd string, opts Options) (*Workspace, error) {
		if !filepath.IsAbs(cwd) {
			return nil, fmt.Errorf("workspace: %q is not an absolute path", cwd)
		}
		root, cwd := filepath.Clean(root), filepath.Clean(cwd)
		rel, err := filepath.Rel(root, cwd)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("workspace: %s is not under the workspace root %s: %w", cwd, root, ErrOutside)
		}
		top, err := os.OpenRoot(root)
		if err != nil {
			return nil, fmt.Errorf("workspace root: %w", err)
		}
		if rel == "." {
			return workspaceOn(cwd, top, opts), nil
		}
		defer top.Close()
		sub, err := top.OpenRoot(rel)
		if err != nil {
			// A link leading out of root says "path escapes from
			// parent"; a missing directory says so.
			return nil, fmt.Errorf("workspace under the root %s: %w", root, err)
		}
		return workspaceOn(cwd, sub, opts), nil
	}
}

// Denying is o with every workspace it opens held to the deny list d
// (nil: DefaultDenyList) instead of the one its caller's Options name.
// The entry points that know the configuration wrap their Opener so; the
// engine then opens workspaces knowing nothing of the list.
func (o Opener) Denying(d *DenyList) Opener {
	return func(cwd string, opts Options) (*Workspace, error) {
		opts.Deny = d
		return o(cwd, opts)
	}
}

// NotChosenError: a local run was asked to read a workspace that is none
// of the directories it may read (Under). It is ErrNoWorkspaces for
// errors.Is: the reads are off, which is not a failure of the operation.
type NotChosenError struct {
	Cwd   string
	Roots []string
}

func (e *NotChosenError) Error() string {
	return fmt.Sprintf("the session's workspace %s is not under %s", e.Cwd, strings.Join(e.Roots, " or "))
}

// Is makes a NotChosenError ErrNoWorkspaces.
func (e *NotChosenError) Is(target error) bool { return target == ErrNoWorkspaces }

// Under is the Opener of a local run: a session file names its workspace
// in its header, and a session someone else wrote (or one whose pi was
// started in the home directory) names whatever it likes; a model steered
// by its text then reads that directory. So only a cwd that is one of
// roots (the run's current directory, and the directories the user named)
// or below one, both with links resolved, is opened; any other is a
// NotChosenError. An empty root is skipped.
func Under(roots ...string) Opener {
	return func(cwd string, opts Options) (*Workspace, error) {
		if cwd == "" {
			return nil, errors.New("workspace: no directory (the session header has no cwd)")
		}
		if !filepath.IsAbs(cwd) {
			return nil, fmt.Errorf("workspace: %q is not an absolute path", cwd)
		}
		realCwd, err := filepath.EvalSymlinks(cwd)
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		var named []string
		for _, r := range roots {
			if r == "" {
				continue
			}
			named = append(named, r)
			realRoot, err := filepath.EvalSymlinks(r)
			if err != nil || !inside(realRoot, realCwd) {
				continue
			}
			root, err := os.OpenRoot(realCwd)
			if err != nil {
				return nil, fmt.Errorf("workspace: %w", err)
			}
			w := workspaceOn(filepath.Clean(cwd), root, opts)
			// What was opened is checked again: a link swapped in after
			// the names were resolved leads elsewhere.
			if real, err := w.RealDir(); err == nil && filepath.IsAbs(real) && !inside(realRoot, real) {
				w.Close()
				break
			}
			return w, nil
		}
		return nil, &NotChosenError{Cwd: cwd, Roots: named}
	}
}

// inside reports whether dir is root or below it (both clean and
// absolute), by name.
func inside(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && filepath.IsLocal(rel)
}
