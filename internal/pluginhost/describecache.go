package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/pith-dev/pith/internal/wire"
)

// DescribeCache remembers which events a plugin binary said it handles,
// so that a command can leave out, without starting it, a plugin whose
// configuration lists no events and whose events the command never fires:
// starting a plugin costs more CPU than a small command.
//
// An entry is keyed by the SHA-256 of the binary's bytes (a different
// binary misses) and, within it, by everything else a Describe answer can
// depend on: the configured name, the host version, the arguments and
// the environment the plugin gets. Hashing a plugin binary costs about as
// much as starting it, so the hash of a binary without a configured
// sha256 is remembered too, next to the file's identity (device, inode,
// size, modification and change times): a rewritten or replaced file has
// another identity and is hashed again, once, after it has run.
//
// What a wrong entry could do is leave out a plugin that handles an event
// the command fires, dropping its veto unseen. So an entry is only read
// from a file this user owns that nobody else can write, it must name the
// hash it is filed under and events this host knows, and the caller never
// leaves out a plugin that fails closed on the cache's word (see
// internal/wiring). Anything unreadable is a miss: the plugin starts.
type DescribeCache struct{ dir string }

// NewDescribeCache returns a cache kept in dir (made, mode 0700, on the
// first write).
func NewDescribeCache(dir string) *DescribeCache { return &DescribeCache{dir: dir} }

// UserDescribeCache is the cache under the user's cache directory
// (pith/describe), or nil when there is none.
func UserDescribeCache() *DescribeCache {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return nil
	}
	return NewDescribeCache(filepath.Join(dir, "pith", "describe"))
}

// maxCacheFile bounds what is read of one cache file; maxVariants, how
// many configurations of one binary an entry keeps.
const (
	maxCacheFile = 64 << 10
	maxVariants  = 16
)

// describeEntry is <sha256>.json: the events one binary handles, per
// variant (describeVariant).
type describeEntry struct {
	SHA256   string              `json:"sha256"`
	Variants map[string][]string `json:"variants"`
}

// hashMemo is path-<sha256 of the path>.json: the hash of the file at
// Path while it has identity ID.
type hashMemo struct {
	Path   string `json:"path"`
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
}

// DescribeKey is what Lookup found out about a spec's binary, for Record.
type DescribeKey struct {
	spec    Spec
	variant string
	id      string          // the file's identity at Lookup ("" when unknown)
	sha     string          // the binary's hash when known at Lookup
	hit     []hooks.EventID // the events found, when found
}

// Lookup returns the events the spec's binary said it handles in an
// earlier Describe, when the cache has them for its current bytes and this
// configuration (ok), and the key to Record the answer of a start under.
// hostVersion is the one the host's Describe requests carry.
func (c *DescribeCache) Lookup(sp Spec, hostVersion string) (events []hooks.EventID, key DescribeKey, ok bool) {
	key = DescribeKey{spec: sp, variant: describeVariant(sp, hostVersion)}
	if c == nil || sp.Reattach != "" {
		return nil, key, false
	}
	key.id = fileIdentity(sp.Path)
	switch {
	case sp.SHA256 != "":
		// The bytes run are checked against it before anything runs
		// (Prepare): a binary that does not match stops the command.
		sum, err := checksum.Parse(sp.SHA256)
		if err != nil {
			return nil, key, false
		}
		key.sha = hex.EncodeToString(sum)
	case key.id != "":
		var memo hashMemo
		if c.read(memoName(sp.Path), &memo) && memo.Path == sp.Path && memo.ID == key.id && validSum(memo.SHA256) {
			key.sha = memo.SHA256
		}
	}
	if key.sha == "" {
		return nil, key, false
	}
	var entry describeEntry
	if !c.read(key.sha+".json", &entry) || entry.SHA256 != key.sha {
		return nil, key, false
	}
	names, found := entry.Variants[key.variant]
	if !found {
		return nil, key, false
	}
	events, unknown := wire.EventsFromStrings(names)
	if len(unknown) > 0 || len(events) == 0 {
		return nil, key, false
	}
	key.hit = events
	return events, key, true
}

// Record stores the events a started plugin described under key, unless
// Lookup found them already, or the binary may have changed since Lookup:
// a file without a configured sha256 is hashed now, and its identity
// must be the one it had before it started, before and after the hash.
// Errors are not reported: the cache only saves starts.
func (c *DescribeCache) Record(key DescribeKey, events []hooks.EventID) {
	if c == nil || slices.Equal(key.hit, events) || key.spec.Reattach != "" || len(events) == 0 {
		return
	}
	sha := key.sha
	if sha == "" {
		if key.id == "" {
			return
		}
		sum, err := hashFile(key.spec.Path)
		if err != nil || fileIdentity(key.spec.Path) != key.id {
			return
		}
		sha = sum
		if err := c.write(memoName(key.spec.Path), hashMemo{Path: key.spec.Path, ID: key.id, SHA256: sha}); err != nil {
			return
		}
	}
	var entry describeEntry
	if !c.read(sha+".json", &entry) || entry.SHA256 != sha || len(entry.Variants) >= maxVariants {
		entry = describeEntry{SHA256: sha}
	}
	if entry.Variants == nil {
		entry.Variants = map[string][]string{}
	}
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	entry.Variants[key.variant] = names
	_ = c.write(sha+".json", entry)
}

// describeVariant digests what, besides its bytes, a binary's Describe
// answer may depend on: the request's configured name and host version,
// its arguments and its environment (the host pid aside, which changes on
// every run).
func describeVariant(sp Spec, hostVersion string) string {
	h := sha256.New()
	write := func(s string) { io.WriteString(h, s); h.Write([]byte{0}) }
	write(sp.Name)
	write(hostVersion)
	for _, a := range sp.Args {
		write("arg=" + a)
	}
	for _, kv := range sp.environment(os.LookupEnv) {
		if !strings.HasPrefix(kv, wire.EnvHostPID+"=") {
			write("env=" + kv)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func memoName(path string) string {
	s := sha256.Sum256([]byte(path))
	return "path-" + hex.EncodeToString(s[:]) + ".json"
}

func validSum(s string) bool {
	_, err := checksum.Parse(s)
	return err == nil && strings.ToLower(s) == s
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// read decodes the cache file name into v when it is one this user owns
// and only this user can write, small enough, and valid JSON.
func (c *DescribeCache) read(name string, v any) bool {
	f, err := os.Open(filepath.Join(c.dir, name))
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCacheFile || !privateFile(fi) {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCacheFile))
	if err != nil {
		return false
	}
	return json.Unmarshal(data, v) == nil
}

// write replaces the cache file name with v atomically (a new file
// renamed over it): a reader sees the old file or the new one, whole.
func (c *DescribeCache) write(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(c.dir, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
