package dispatch

import "errors"

// ErrChecksumMismatch: the plugin's binary does not match its
// configured sha256, so it is not run. A call failing with it stops
// the operation whatever the plugin's failure policy: the policy is
// about a plugin that errs, not about one that is not the binary the
// configuration trusts (its veto would be dropped unseen).
var ErrChecksumMismatch = errors.New("plugin binary does not match its configured sha256")
