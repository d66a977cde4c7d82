package viewer

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/store"
	"github.com/tidwall/gjson"
)

// maxDirListed bounds the sessions a directory's index lists.
const maxDirListed = 10000

// maxDirDepth bounds how deep under the directory sessions are looked for:
// pi keeps them one level down (sessions/<cwd-encoded>/<time>_<id>.jsonl).
const maxDirDepth = 4

// Dir serves every session file under dir (`pith view DIR`): pi's
// sessions directory, or any tree of .jsonl files. Names are confined to
// dir through an os.Root (a link that leads out is not followed), only
// regular files are read, and each session's page follows its file live
// as for one file. The index lists the sessions by project — the cwd
// their header names — newest first. opts may set the Logger, Settings
// and the bounds (MaxOpen, MaxBytes); the rest is Dir's.
func Dir(dir string, opts SessionsOptions) (*Sessions, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	d := &dirSource{root: root, path: abs}
	opts.Resolve = d.resolve
	opts.List = d.list
	opts.Group = d.group
	s := NewSessions(opts)
	s.onClose = root.Close
	return s, nil
}

type dirSource struct {
	root *os.Root
	path string
}

// errNotSession refuses a name that is no session file under the
// directory (the page answers 404 without detail).
var errNotSession = errors.New("viewer: not a session under the directory")

func (d *dirSource) open(name string) (*os.File, error) {
	return regularfile.Open(name, os.O_RDONLY, 0, d.root.Lstat, d.root.OpenFile)
}

func (d *dirSource) resolve(name string) (Source, error) {
	if !filepath.IsLocal(name) || !strings.HasSuffix(name, ".jsonl") || strings.Count(name, "/") >= maxDirDepth {
		return Source{}, errNotSession
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") {
			return Source{}, errNotSession
		}
	}
	st, err := d.root.Lstat(name)
	if err != nil {
		return Source{}, err
	}
	if err := regularfile.Check(name, st); err != nil {
		return Source{}, err
	}
	return Source{
		Path: filepath.Join(d.path, filepath.FromSlash(name)),
		Name: name,
		Tail: FileTail(func() (*os.File, error) { return d.open(name) }, nil),
		OpenArchive: func() (io.ReadCloser, error) {
			return d.open(compaction.ArchivePath(name))
		},
		Size: st.Size(),
	}, nil
}

func (d *dirSource) list(*http.Request) ([]string, error) {
	var names []string
	err := fs.WalkDir(d.root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: not listed
		}
		if e.IsDir() {
			if p != "." && (strings.HasPrefix(e.Name(), ".") || strings.Count(p, "/") >= maxDirDepth-1) {
				return fs.SkipDir
			}
			return nil
		}
		if e.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, p)
			if len(names) >= maxDirListed {
				return fs.SkipAll
			}
		}
		return nil
	})
	return store.SkipArchives(names), err
}

// group sorts the sessions by project (the cwd of their header; the
// directory's name when the header names none), the project with the
// newest session first, and each project's sessions newest first (by
// the header's timestamp, which pi's file names begin with too).
func (d *dirSource) group(names []string) []IndexGroup {
	byCwd := map[string]*IndexGroup{}
	newest := map[string]string{}
	for _, n := range names {
		h := d.header(n)
		project := cmp.Or(h.cwd, filepath.Dir(n))
		g, ok := byCwd[project]
		if !ok {
			g = &IndexGroup{Name: project}
			byCwd[project] = g
		}
		label := strings.TrimSpace(h.timestamp + " " + h.id)
		g.Sessions = append(g.Sessions, IndexEntry{Name: n, Label: cmp.Or(label, filepath.Base(n)), sortKey: h.timestamp + "\x00" + n})
		newest[project] = max(newest[project], h.timestamp+"\x00"+n)
	}
	out := make([]IndexGroup, 0, len(byCwd))
	for _, g := range byCwd {
		slices.SortFunc(g.Sessions, func(a, b IndexEntry) int { return strings.Compare(b.sortKey, a.sortKey) })
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b IndexGroup) int {
		return cmp.Or(strings.Compare(newest[b.Name], newest[a.Name]), strings.Compare(a.Name, b.Name))
	})
	return out
}

type dirHeader struct{ cwd, timestamp, id string }

// header reads what the index shows of a session: its header line's
// cwd, timestamp and id (nothing for a file that has none readable).
func (d *dirSource) header(name string) dirHeader {
	f, err := d.open(name)
	if err != nil {
		return dirHeader{}
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, 64<<10), 64<<10).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return dirHeader{}
	}
	if !gjson.ValidBytes(line) || gjson.GetBytes(line, "type").Str != "session" {
		return dirHeader{}
	}
	return dirHeader{cwd: gjson.GetBytes(line, "cwd").Str, timestamp: gjson.GetBytes(line, "timestamp").Str, id: gjson.GetBytes(line, "id").Str}
}
