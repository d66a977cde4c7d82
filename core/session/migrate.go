package session

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// CurrentVersion is the session format version Pith reads and writes.
const CurrentVersion = 3

// migrate upgrades a v1 or v2 file to v3 in memory (docs/behaviour.md §1, Migrations).
// Migrated lines get new Raw bytes; the header's version becomes 3.
//
// v1 → v2: entries get ids and a linear parent chain in file order, and a
// compaction's firstKeptEntryIndex (a position in the parsed file, header =
// 0) becomes firstKeptEntryId. Ids are derived from the session id and the
// entry's position, so migrating the same file twice gives the same ids.
// v2 → v3: the message role "hookMessage" becomes "custom".
func migrate(f *File) bool {
	changed := false
	if f.Header.Version < 2 {
		migrateV1(f)
		changed = true
	}
	if f.Header.Version < 3 {
		for _, e := range f.Entries {
			if e.Type == TypeMessage && e.Role() == "hookMessage" {
				replaceRaw(e, mustSet(e.Raw, "message.role", RoleCustom))
			}
		}
		changed = true
	}
	if changed {
		f.Header.Raw = mustSet(f.Header.Raw, "version", CurrentVersion)
		f.Header.Version = CurrentVersion
	}
	return changed
}

func migrateV1(f *File) {
	used := make(map[string]bool, len(f.Entries))
	prev := ""
	for i, e := range f.Entries {
		id := derivedID(f.Header.ID, i, used)
		raw := e.Raw
		raw = mustSet(raw, "id", id)
		if prev == "" {
			raw = mustSet(raw, "parentId", nil)
		} else {
			raw = mustSet(raw, "parentId", prev)
		}
		if e.Type == TypeCompaction {
			if idx := gjson.GetBytes(raw, "firstKeptEntryIndex"); idx.Type == gjson.Number {
				raw = mustDelete(raw, "firstKeptEntryIndex")
				// The index counts the header as 0, and the target must
				// already have an id, as in the reference migration.
				t := int(idx.Int()) - 1
				if t >= 0 && t < i {
					raw = mustSet(raw, "firstKeptEntryId", f.Entries[t].ID)
				}
			}
		}
		replaceRaw(e, raw)
		prev = id
	}
	f.Header.Version = 2
}

func derivedID(seed string, i int, used map[string]bool) string {
	for n := 0; ; n++ {
		sum := sha256.Sum256([]byte(seed + "/" + strconv.Itoa(i) + "/" + strconv.Itoa(n)))
		id := hex.EncodeToString(sum[:4])
		if !used[id] {
			used[id] = true
			return id
		}
	}
}

// mustSet sets a field on a JSON object line. The lines were validated as
// objects when parsed, so sjson cannot fail on them.
func mustSet(raw []byte, path string, v any) []byte {
	out, err := sjson.SetBytes(append([]byte(nil), raw...), path, v)
	if err != nil {
		panic("session: set " + path + ": " + err.Error())
	}
	return out
}

func mustDelete(raw []byte, path string) []byte {
	out, err := sjson.DeleteBytes(append([]byte(nil), raw...), path)
	if err != nil {
		panic("session: delete " + path + ": " + err.Error())
	}
	return out
}

// replaceRaw gives an entry a new line and re-reads its fields from it.
func replaceRaw(e *Entry, raw []byte) {
	line := e.Line
	if reason := scanEntry(raw, e); reason != "" {
		panic("session: a migrated line does not scan: " + reason)
	}
	e.Line = line
	e.built.Store(nil) // it was built from the old line
}
