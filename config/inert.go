package config

import (
	"fmt"
	"os"
	"sort"
)

// InertKeys are keys the schema accepts that nothing acts on yet, with the
// reason a user is shown. `pith config validate` warns about every one a
// file sets, and a test that walks the schema and the code
// (TestEveryKeyIsRead) keeps the list exact: a key no code reads must be
// here, and a key some code reads must not.
var InertKeys = map[string]string{
	"branchSummary.skipPrompt": "accepted so that a pi branchSummary block carries over; Pith never asks whether to summarize " +
		"(branchSummary.enabled and --summarize/--no-summarize decide)",
}

// InertSet returns a warning for every key of InertKeys that the file at
// path or the PITH_ environment sets, sorted by key. It reports no
// problems of the file itself: Load does.
func InertSet(path string, opts ...Option) ([]Problem, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("%s: %w", path, notFound(err))
		}
	}
	k, _, err := parseKeys(data, path, opts)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for key, why := range InertKeys {
		if k.Exists(key) {
			out = append(out, Problem{Key: key, Reason: "has no effect: " + why})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
