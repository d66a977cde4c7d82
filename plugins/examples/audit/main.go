// Command audit is an example Pith plugin for the two notifications,
// session_compact and session_tree: it appends one JSON line per event to a
// file, so an operator can see when history was rewritten or abandoned, by
// whom (the built-in summarizer or a plugin) and how much text replaced it.
// The summary text itself stays out of the log unless --include-summary asks
// for it, because summaries quote the conversation.
//
// Each line is written with a single write(2) on a file opened O_APPEND and
// fsync'd before the handler returns, so concurrent writers (several hosts,
// or the host and a log shipper truncating) never interleave partial lines
// and an acknowledged event survives a crash.
//
//	plugins:
//	  - name: audit
//	    path: ./bin/plugins/audit
//	    args: ["--file", "/var/log/pith/audit.jsonl"]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pith-dev/pith/sdk"
)

func main() {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	file := fs.String("file", "", "JSON-lines file the events are appended to (required)")
	includeSummary := fs.Bool("include-summary", false, "also record the summary text")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *file == "" {
		fmt.Fprintln(os.Stderr, "audit: --file is required")
		os.Exit(2)
	}
	a, err := open(*file, *includeSummary, time.Now)
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
	sdk.ServePlugin(sdk.ServeOpts{Compact: a, Tree: a, Close: a}, sdk.WithName("audit"), sdk.WithVersion("1.0.0"))
}

// auditor appends records to one file.
type auditor struct {
	includeSummary bool
	now            func() time.Time

	mu sync.Mutex // one record at a time: notifications arrive concurrently
	f  *os.File
}

// open opens (creating it if needed, owner-only) the audit file for appending.
func open(path string, includeSummary bool, now func() time.Time) (*auditor, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit file: %w", err)
	}
	return &auditor{includeSummary: includeSummary, now: now, f: f}, nil
}

// record is one line of the audit file. Fields that do not apply to an event
// are left out.
type record struct {
	Time             string `json:"time"`
	Event            string `json:"event"`
	SessionID        string `json:"sessionId"`
	EntryID          string `json:"entryId,omitempty"`
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
	NewLeafID        string `json:"newLeafId,omitempty"`
	OldLeafID        string `json:"oldLeafId,omitempty"`
	FromExtension    bool   `json:"fromExtension"`
	TokensBefore     *int   `json:"tokensBefore,omitempty"`
	// SummaryChars is the summary's length in characters (Unicode code
	// points); absent when the event carries no summary.
	SummaryChars *int   `json:"summaryChars,omitempty"`
	Summary      string `json:"summary,omitempty"`
}

// savedEntry is the part of a compaction or branch_summary entry the audit
// reads.
type savedEntry struct {
	ID               string `json:"id"`
	Summary          string `json:"summary"`
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	TokensBefore     *int   `json:"tokensBefore"`
}

func (a *auditor) fromEntry(r *record, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var e savedEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("decode the saved entry: %w", err)
	}
	n := utf8.RuneCountInString(e.Summary)
	r.EntryID, r.FirstKeptEntryID, r.TokensBefore, r.SummaryChars = e.ID, e.FirstKeptEntryID, e.TokensBefore, &n
	if a.includeSummary {
		r.Summary = e.Summary
	}
	return nil
}

// Compact records a saved compaction.
func (a *auditor) Compact(_ context.Context, ev *sdk.CompactEvent) error {
	r := record{Event: string(sdk.EventCompact), SessionID: ev.SessionID, FromExtension: ev.FromExtension}
	if err := a.fromEntry(&r, ev.CompactionEntry); err != nil {
		return err
	}
	return a.append(r)
}

// Tree records a navigation, with the branch summary entry when one was saved.
func (a *auditor) Tree(_ context.Context, ev *sdk.TreeEvent) error {
	r := record{Event: string(sdk.EventTree), SessionID: ev.SessionID, NewLeafID: ev.NewLeafID, OldLeafID: ev.OldLeafID, FromExtension: ev.FromExtension}
	if err := a.fromEntry(&r, ev.SummaryEntry); err != nil {
		return err
	}
	return a.append(r)
}

// append writes r as one line with a single write and syncs it to disk.
func (a *auditor) append(r record) error {
	r.Time = a.now().UTC().Format(time.RFC3339Nano)
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return errClosed
	}
	if _, err := a.f.Write(line); err != nil {
		return fmt.Errorf("append to %s: %w", a.f.Name(), err)
	}
	if err := a.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", a.f.Name(), err)
	}
	return nil
}

var errClosed = errors.New("audit file already closed")

// Close closes the file when the host stops the plugin.
func (a *auditor) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
