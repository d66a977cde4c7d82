package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
