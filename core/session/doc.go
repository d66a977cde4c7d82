// Package session owns the session data model and pi's JSONL file format
// (docs/behaviour.md §1–§2): entries and messages, lossless parsing and
// encoding, the in-memory migration from v1 and v2 files, the entry tree
// (paths, children, common ancestors) and BuildContext, which turns a path
// into the messages sent to a model. Backend is the open session the
// engine, compaction and navigation work on, and Tx the change its Update
// hands out; the backends live elsewhere: a session file (store/files,
// with the write protocol, locks and crash recovery), a session of a
// shared store (package store), a read-only Snapshot here.
//
// Entries are decoded lazily. Parsing reads only each line's envelope (type,
// id, parentId) and keeps the line's exact bytes, so an entry that nobody
// modifies is written back byte for byte, and a message is decoded only when a
// caller asks for it. This is what makes a 100 MB session open in well under a
// second.
//
// Session files and clients are untrusted: a line nested deeper than
// jsondepth.Max is malformed (skipped with a warning), never walked
// recursively past that depth; LogWarnings is the one format for every
// warning about a file; parentId loops are found (Tree.Cycles) and
// reported; and ParseClientEntry is the strict parser for entries a client
// of pith serve appends (duplicate keys, types, envelope).
//
// One JSON scanner (jsonscan.go) reads every line, walk and client entry;
// the strict parser is a policy plugged into it, not a second parser. What
// is appended is checked in one place whatever its source: MessageDraft for
// agent messages, and every Draft's fields when its line is built (a JSON
// object that leaves type, id, parentId and timestamp to the writer).
package session
