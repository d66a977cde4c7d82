package sdk

import (
	"context"
	"encoding/json"
)

// PathPageSize is how many entries ReadPath asks the host for at a time.
// The host may answer with fewer: it keeps every answer within the
// plugin's limits.pathEntriesBytes or 1 MiB, whichever is larger (with at
// least one entry).
const PathPageSize = 4096

// ReadPath calls fn with each entry of the path root → leafID of the
// session of the call being handled, from path index from on, in order,
// paging through the host's API (sdk.Host(ctx).ReadEntries). An empty
// leafID means the session's current leaf. It stops at the first error,
// fn's or the host's.
//
// Use it when an event says it was cut to your plugin's limits:
//
//   - session_before_compact with PathTruncated (or LabelsTruncated):
//     ReadPath(ctx, ev.LeafID, 0, fn) visits the whole path;
//   - its Preparation.MessagesTruncated: the summarized range starts at
//     ReadPath(ctx, ev.LeafID, ev.Preparation.RangeStart, fn) and ends
//     before the entry ev.Preparation.FirstKeptEntryID;
//   - session_before_tree with EntriesTruncated: ReadPath(ctx,
//     ev.OldLeafID, 0, fn) visits the abandoned branch's path, whose entries
//     after ev.CommonAncestorID are the ones to summarize.
func ReadPath(ctx context.Context, leafID string, from int, fn func(index int, entry json.RawMessage) error) error {
	host := Host(ctx)
	next := max(from, 0)
	for {
		page, err := host.ReadEntries(ctx, ReadEntriesRequest{PathOnly: true, LeafID: leafID, Offset: next, Limit: PathPageSize})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, e := range page {
			if err := fn(next, e); err != nil {
				return err
			}
			next++
		}
	}
}
