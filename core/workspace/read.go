package workspace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pith-dev/pith/internal/regularfile"
)

// Sentinel errors, for callers that explain a refusal to a model or a user.
var (
	// ErrOutside: the path names something outside the workspace.
	ErrOutside = errors.New("path is outside the workspace")
	// ErrNotRegular: the path is a directory, FIFO, device, socket or
	// the like (internal/regularfile's sentinel, as session's).
	ErrNotRegular = regularfile.ErrNotRegular
	// ErrBinary: the file holds NUL bytes in its first block.
	ErrBinary = errors.New("binary file")
	// ErrNotExist: no such file in the workspace.
	ErrNotExist = fs.ErrNotExist
)

// DefaultMaxReadBytes bounds what one Read returns when Options leaves it 0.
const DefaultMaxReadBytes = 256 << 10

// sniffBytes is how much of a file is checked for NUL bytes.
const sniffBytes = 8 << 10

// Options configure a Workspace.
type Options struct {
	// MaxReadBytes is the most content one Read returns; a longer window is
	// cut at a line boundary and marked Truncated. 0 means
	// DefaultMaxReadBytes.
	MaxReadBytes int
	// Deny is the deny list every read is held to; nil means
	// DefaultDenyList (an empty DenyList denies nothing).
	Deny *DenyList
}

// Workspace is an open workspace directory. It is safe for concurrent use;
// Close it when done.
type Workspace struct {
	dir     string
	root    *os.Root
	maxRead int
	deny    *DenyList
}

// Open opens dir (which must be an absolute path to a directory) as a
// workspace. It is the Opener for a local user's own sessions: any
// directory they name is theirs to read.
func Open(dir string, opts Options) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("workspace: no directory (the session header has no cwd)")
	}
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("workspace: %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return workspaceOn(dir, root, opts), nil
}

// workspaceOn is the workspace of dir, read through root.
func workspaceOn(dir string, root *os.Root, opts Options) *Workspace {
	maxRead := opts.MaxReadBytes
	if maxRead <= 0 {
		maxRead = DefaultMaxReadBytes
	}
	deny := opts.Deny
	if deny == nil {
		deny = defaultDeny
	}
	return &Workspace{dir: dir, root: root, maxRead: maxRead, deny: deny}
}

// Dir is the workspace's absolute directory.
func (w *Workspace) Dir() string { return w.dir }

// RealDir is the directory the workspace has open, by its path with every
// link resolved: what a reader elsewhere (a plugin) can open again and
// check it reached the same place (RealPath), where Dir may lead through
// links that could be swapped meanwhile.
func (w *Workspace) RealDir() (string, error) {
	f, err := w.root.Open(".")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return RealPath(f)
}

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Rel turns a path as a model or a session log writes it — relative to the
// workspace, or absolute inside it — into the clean slash-separated path
// relative to the workspace that Read and BuildMessage report. A path that
// is absolute elsewhere, or climbs out with "..", is ErrOutside. Symbolic
// links are checked when the file is opened, not here.
func (w *Workspace) Rel(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("%q: %w", path, ErrOutside)
	}
	p := filepath.FromSlash(path)
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(w.dir, filepath.Clean(p))
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, ErrOutside)
		}
		p = rel
	}
	p = filepath.Clean(p)
	if p == ".." || strings.HasPrefix(p, ".."+string(filepath.Separator)) || filepath.IsAbs(p) {
		return "", fmt.Errorf("%s: %w", path, ErrOutside)
	}
	return filepath.ToSlash(p), nil
}

// Denied is ErrDenied (named by rel) when the deny list matches a name
// on the path of rel (as Rel returns it) inside the workspace, the
// workspace directory's own names included; nil otherwise. It looks at
// names only: Read also checks what a link leads to and the content.
func (w *Workspace) Denied(rel string) error {
	if w.deny.Denies(filepath.Join(w.dir, filepath.FromSlash(rel))) {
		return fmt.Errorf("%s: %w", rel, ErrDenied)
	}
	return nil
}

// ReadOptions choose a window of lines.
type ReadOptions struct {
	// Offset is the first line to return, 1-based; 0 means 1.
	Offset int
	// Limit is the most lines to return; 0 means as many as fit
	// MaxReadBytes.
	Limit int
	// MaxBytes lowers the workspace's MaxReadBytes for this read (0: the
	// workspace's).
	MaxBytes int
}

// File is the result of a Read.
type File struct {
	// Path is relative to the workspace, slash-separated.
	Path string
	// Content holds the lines of the window, each with its newline.
	Content string
	// StartLine is the 1-based number of the first line in Content;
	// Lines is how many lines Content holds.
	StartLine, Lines int
	// Size is the file's size in bytes.
	Size int64
	// EOF reports that the window reaches the end of the file.
	EOF bool
	// Truncated reports that the window was cut short by the byte bound
	// (not by Limit): more lines were asked for than were returned.
	Truncated bool
}

// Read returns a window of the current content of path. The file must be a
// regular text file inside the workspace; following a symbolic link is
// allowed only while it stays inside. It is the one read of a workspace
// file, so the deny list is enforced here: on the name asked (Denied),
// on the file opened, by its real path (a link named innocently that
// leads to .ssh/id_rsa), and on the content read from the file's start
// through the window (a private key's header anywhere in it: a window
// starting after the header line would hand out the key's body).
func (w *Workspace) Read(path string, o ReadOptions) (*File, error) {
	rel, err := w.Rel(path)
	if err != nil {
		return nil, err
	}
	if err := w.Denied(rel); err != nil {
		return nil, err
	}
	// Through the one regular-file open (internal/regularfile): a FIFO
	// in the workspace would block a plain open until a writer came, and
	// with it the compaction that reads the file.
	f, err := regularfile.Open(filepath.FromSlash(rel), os.O_RDONLY, 0, w.root.Stat, w.root.OpenFile)
	if errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%s: %w", rel, regularfile.Unnamed(err))
	}
	if err != nil {
		return nil, w.openError(rel, err)
	}
	defer f.Close()
	if err := w.deniedOpened(f, rel); err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	if o.Offset < 0 || o.Limit < 0 {
		return nil, fmt.Errorf("%s: offset and limit must not be negative", rel)
	}
	maxBytes := w.maxRead
	if o.MaxBytes > 0 && o.MaxBytes < maxBytes {
		maxBytes = o.MaxBytes
	}
	start := max(o.Offset, 1)

	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(sniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return nil, fmt.Errorf("%s: %w", rel, ErrBinary)
	}
	out := &File{Path: rel, StartLine: start, Size: st.Size()}
	denied := func() error { return fmt.Errorf("%s: %w", rel, ErrDenied) }
	var buf strings.Builder
	line := 0
	for {
		text, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole, but never more
			// than the byte bound plus one buffer.
			long := append([]byte(nil), text...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxBytes {
				text, err = r.ReadSlice('\n')
				long = append(long, text...)
			}
			for errors.Is(err, bufio.ErrBufferFull) {
				// Skip the rest of a line we cannot return, still looking
				// for a key header in it: the lines after it could be
				// the key's body.
				var skipped []byte
				skipped, err = r.ReadSlice('\n')
				if w.deny.RefusesContent(skipped) {
					return nil, denied()
				}
			}
			text = long
		}
		if w.deny.RefusesContent(text) {
			return nil, denied()
		}
		if len(text) > 0 {
			line++
			if line >= start {
				if o.Limit > 0 && out.Lines >= o.Limit {
					return finish(out, &buf, false), nil
				}
				if buf.Len()+len(text) > maxBytes {
					if out.Lines == 0 {
						// A first line over the bound is cut inside the line
						// rather than returned as nothing.
						buf.Write(text[:maxBytes])
						out.Lines = 1
					}
					out.Truncated = true
					return finish(out, &buf, false), nil
				}
				buf.Write(text)
				out.Lines++
			}
		}
		if err == io.EOF {
			return finish(out, &buf, true), nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
	}
}

// deniedOpened applies the deny list to the file f has open, by its real
// path: Denied saw the name asked, and a link on the way may lead to a
// denied one inside the workspace.
func (w *Workspace) deniedOpened(f *os.File, rel string) error {
	real, err := RealPath(f)
	if err != nil || !filepath.IsAbs(real) {
		// Without /proc (or off Linux, where RealPath resolves f's name,
		// which is relative to the root here), by the name resolved now.
		real, err = filepath.EvalSymlinks(filepath.Join(w.dir, filepath.FromSlash(rel)))
	}
	if err != nil {
		return fmt.Errorf("%s: %w (its real path cannot be checked)", rel, ErrDenied)
	}
	if w.deny.Denies(real) {
		return fmt.Errorf("%s: %w", rel, ErrDenied)
	}
	return nil
}

func finish(f *File, buf *strings.Builder, eof bool) *File {
	f.Content = buf.String()
	f.EOF = eof
	return f
}

// openError names the reason a file could not be opened in words a model
// can act on; an escape through a symlink or ".." is ErrOutside.
func (w *Workspace) openError(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", rel, ErrNotExist)
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("%s: %w", rel, ErrOutside)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", rel, pe.Err)
	}
	return fmt.Errorf("%s: %w", rel, err)
}
