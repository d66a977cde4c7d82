package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRestartNeeded refuses a reload that changes what a running process
// must not change under its callers: where sessions and workspaces are,
// the store and its leases, and the authentication in force. A restart
// makes such a change on purpose; a reload may be a file read in the
// middle of a save.
var ErrRestartNeeded = errors.New("this change needs a restart")

// CheckReload says why next must not replace old in a running process, in
// one error naming every key concerned (wrapping ErrRestartNeeded), or nil.
// The Watcher asks it before every swap, whatever started the reload.
func CheckReload(old, next *Config) error {
	var why []string
	same := func(key, before, after string) {
		if before != after {
			why = append(why, fmt.Sprintf("%s would change from %q to %q", key, before, after))
		}
	}
	same("sessions.root", old.Sessions.Root, next.Sessions.Root)
	same("server.workspaceRoot", old.Server.WorkspaceRoot, next.Server.WorkspaceRoot)
	if old.Sessions.Store != next.Sessions.Store {
		// The open sessions, their handles and the other hosts' view all
		// hang on the store: switching under them would split a session
		// in two. Only the display form is named: the URL may hold a
		// password.
		why = append(why, fmt.Sprintf("sessions.store cannot change while running (%s in use)", old.Sessions.StoreDisplay()))
	}
	if old.Sessions.LeaseTTL != next.Sessions.LeaseTTL {
		// Read once at start: the open handles renew with it.
		why = append(why, fmt.Sprintf("sessions.leaseTTL is read at start (%s in force)", old.Sessions.LeaseTTL))
	}
	if p := old.Server.AuthRemovedBy(next.Server); p != "" {
		why = append(why, p)
	}
	why = append(why, failClosedWeakenedBy(old.Plugins, next.Plugins)...)
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; the configuration in force is kept (restart to apply it)", ErrRestartNeeded, strings.Join(why, "; "))
}

// AuthRemovedBy says how replacing s with next would take away a way of
// authenticating callers that s has — every bearer token gone, or client
// certificates (server.tls.clientCAFile) no longer asked for — or let a
// token reach sessions outside its prefix in force, or "" when it would
// not. This is the one rule for "a reload removes authentication": a
// file cut short by a save (empty, stopped before server.tokens, or right
// after a token's sha256, before its prefix) reads as a valid
// configuration without them, and applied it would let anonymous callers
// in, give a tenant every tenant's sessions, or, on an exposed listener,
// lock every caller out. Replacing tokens with other tokens (rotation),
// revoking some, narrowing a prefix and adding a mechanism are not
// removals; widening a token's prefix is a restart.
func (s Server) AuthRemovedBy(next Server) string {
	var gone []string
	if len(s.Tokens) > 0 && len(next.Tokens) == 0 {
		gone = append(gone, fmt.Sprintf("every server.tokens entry (%d in force)", len(s.Tokens)))
	}
	if s.TLS.ClientCAFile != "" && next.TLS.ClientCAFile == "" {
		gone = append(gone, "client certificates (server.tls.clientCAFile)")
	}
	prefixes := make(map[string]string, len(s.Tokens))
	for _, t := range s.Tokens {
		prefixes[strings.ToLower(t.SHA256)] = t.Prefix
	}
	for i, t := range next.Tokens {
		was, ok := prefixes[strings.ToLower(t.SHA256)]
		if ok && !strings.HasPrefix(t.Prefix, was) {
			gone = append(gone, fmt.Sprintf("the prefix of server.tokens[%d] (%s), which would reach %s instead of %s", i, t.Name, describePrefix(t.Prefix), describePrefix(was)))
		}
	}
	if len(gone) == 0 {
		return ""
	}
	return "it would remove authentication: " + strings.Join(gone, " and ")
}

// describePrefix names the sessions a token's prefix reaches.
func describePrefix(p string) string {
	if p == "" {
		return "every session"
	}
	return fmt.Sprintf("%q", p)
}

// failClosedWeakenedBy says, one phrase a plugin, how next would weaken a
// plugin of old that fails closed: removed, failing open, or no longer
// checked against its sha256. An operator marks a plugin failure: closed
// because the work must stop without it (a redaction or policy plugin);
// a file cut short by a save drops the plugins listed after the cut, and
// a plugin entry cut after its path takes the defaults (failure open, no
// checksum). So those changes are a restart, as removing authentication
// is; a reload may still add plugins, reorder them, change their
// arguments, limits or timeouts, or replace a checksum with another.
func failClosedWeakenedBy(old, next []Plugin) []string {
	byName := make(map[string]Plugin, len(next))
	for _, p := range next {
		byName[p.Name] = p
	}
	var why []string
	for _, p := range old {
		if p.Failure != FailureClosed {
			continue
		}
		n, kept := byName[p.Name]
		switch {
		case !kept:
			why = append(why, fmt.Sprintf("plugin %s, which fails closed, would be removed", p.Name))
		case n.Failure != FailureClosed:
			why = append(why, fmt.Sprintf("plugin %s would fail %s instead of closed", p.Name, n.Failure))
		case p.SHA256 != "" && n.SHA256 == "":
			why = append(why, fmt.Sprintf("plugin %s, which fails closed, would no longer be checked against its sha256", p.Name))
		}
	}
	return why
}
