package workspace

import "github.com/pith-dev/pith/core/workspace/deny"

// The deny list lives in core/workspace/deny, a leaf the plugin SDK links
// too; these names keep the workspace's API as it was.

// ErrDenied: the file is on the workspace deny list (by a name on its
// path, by the name of what a link on the way leads to, or by a private
// key in its content). A model told so learns nothing else of the file:
// not whether it exists, not its size.
var ErrDenied = deny.ErrDenied

// DefaultDeny are the patterns of files no model is given, whatever the
// workspace (deny.Patterns).
var DefaultDeny = deny.Patterns

// DenyList is a set of deny patterns, compiled. The zero value and nil
// deny nothing; NewDenyList builds one.
type DenyList = deny.List

// NewDenyList compiles patterns, after DefaultDeny and the private-key
// header check when defaults is set (deny.New).
func NewDenyList(patterns []string, defaults bool) (*DenyList, error) {
	return deny.New(patterns, defaults)
}

// CheckDenyPattern says why p is no deny pattern, or nil.
func CheckDenyPattern(p string) error { return deny.CheckPattern(p) }

// defaultDeny is DefaultDeny compiled, for workspaces whose Options name
// no list.
var defaultDeny = deny.Builtin()

// DefaultDenyList is DefaultDeny compiled.
func DefaultDenyList() *DenyList { return defaultDeny }
