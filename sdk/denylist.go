package sdk

import "github.com/pith-dev/pith/core/workspace/deny"

// ErrDenied is the host's error for a file on its workspace deny list.
// A plugin that reads the session's workspace itself returns it (wrapped)
// for a file the host would not hand a model either.
var ErrDenied = deny.ErrDenied

// DeniedPath reports whether the host's built-in workspace deny list
// (private keys by name, .ssh, .aws, .env*, .netrc, ...) denies some name
// on path. Pass the real path of what was opened, links resolved, so a
// link to ~/.ssh/id_ed25519 is denied by what it leads to.
func DeniedPath(path string) bool { return deny.Builtin().Denies(path) }

// DeniedContent reports whether b holds a private key's header or an API
// token of a well-known format (AWS, GitHub, GitLab, Slack, Stripe,
// OpenAI, Anthropic, Google, npm, Hugging Face, PyPI), which the built-in
// deny list refuses whatever the file's name.
func DeniedContent(b []byte) bool { return deny.Builtin().RefusesContent(b) }
