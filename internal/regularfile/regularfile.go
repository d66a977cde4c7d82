// Package regularfile is Pith's one way to open a file that must be a
// regular file: a session, its archive, a sidecar. A FIFO in its place
// would block the open until a writer comes (or a read forever), a device
// would be read without end, a directory cannot be read at all. Open
// opens without blocking and decides on the opened descriptor, so a file
// swapped for a FIFO between a check by name and the open is refused too.
//
// Which names may be followed is each caller's policy, not this
// package's: the caller passes the stat and open functions (os.Stat and
// os.OpenFile follow symlinks, an os.Root confines every name to its
// directory, core/session's FS refuses a symlink by passing Lstat).
package regularfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ErrNotRegular is what every refusal wraps: callers branch on it with
// errors.Is.
var ErrNotRegular = errors.New("not a regular file")

// Error is a refusal: the name given to Open (or Check) and the mode of
// what stands there.
type Error struct {
	Name string
	Mode fs.FileMode
}

// Error reads "NAME is not a regular file (a FIFO)".
func (e *Error) Error() string { return e.Name + " is " + e.Unnamed().Error() }

// Unnamed is the refusal without the name, "not a regular file (a
// FIFO)", still wrapping ErrNotRegular: for a caller that names the file
// itself, by the path the user gave rather than the name Open was given.
func (e *Error) Unnamed() error {
	kind := Kind(e.Mode)
	return fmt.Errorf("%w (a%s %s)", ErrNotRegular, article(kind), kind)
}

func (e *Error) Unwrap() error { return ErrNotRegular }

// Unnamed returns a refusal in err without its name (see Error.Unnamed)
// and any other error as it is.
func Unnamed(err error) error {
	var re *Error
	if errors.As(err, &re) {
		return re.Unnamed()
	}
	return err
}

// article is "n" before a kind that starts with a vowel.
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "n"
	}
	return ""
}

// Kind names what a mode is, in words a user knows.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// Check returns an *Error for name unless fi is a regular file.
func Check(name string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return &Error{Name: name, Mode: fi.Mode()}
}

// File is what Open needs of an opened file: its own stat, and closing it
// when it is refused.
type File interface {
	Stat() (fs.FileInfo, error)
	Close() error
}

// Open opens name with open(name, flag|NoBlock, perm) and returns it only
// if the opened file is a regular file; anything else is closed and
// refused with an *Error. stat, when not nil, is asked first, so that
// what is plainly not a regular file is refused without being opened
// (opening a device can have effects of its own); it is only a shortcut,
// the opened file's own stat decides. Errors of stat and open come back
// as they are, for the caller to word.
//
// When stat found a file, the file opened must be that one (ErrChanged
// otherwise): a caller whose policy is to refuse a symlink (stat is
// Lstat) would otherwise open what a link swapped in after the check
// leads to — another tenant's session, through an os.Root that follows
// links staying inside it. A name that changed is checked and opened again,
// a few times: a rewrite that renames a new file over the name (prune,
// migrate) is a change too, and the new file is as good to open; a link
// swapped in is refused by the check the second time.
func Open[F File](name string, flag int, perm fs.FileMode, stat func(name string) (fs.FileInfo, error), open func(name string, flag int, perm fs.FileMode) (F, error)) (F, error) {
	for attempt := 1; ; attempt++ {
		f, err := openOnce(name, flag, perm, stat, open)
		if errors.Is(err, ErrChanged) && attempt < changedAttempts {
			continue
		}
		return f, err
	}
}

// changedAttempts bounds how often Open checks and opens a name that keeps
// changing under it.
const changedAttempts = 4

func openOnce[F File](name string, flag int, perm fs.FileMode, stat func(name string) (fs.FileInfo, error), open func(name string, flag int, perm fs.FileMode) (F, error)) (F, error) {
	var none F
	var checked fs.FileInfo
	if stat != nil {
		fi, err := stat(name)
		if err != nil {
			return none, err
		}
		if err := Check(name, fi); err != nil {
			return none, err
		}
		checked = fi
	}
	f, err := open(name, flag|NoBlock, perm)
	if err != nil {
		return none, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = Check(name, fi)
	}
	if err == nil && checked != nil && comparable(checked) && comparable(fi) && !os.SameFile(checked, fi) {
		err = fmt.Errorf("%s: %w", name, ErrChanged)
	}
	if err != nil {
		f.Close()
		return none, err
	}
	return f, nil
}

// ErrChanged: the name led to another file when it was opened than when
// it was checked.
var ErrChanged = errors.New("changed while it was opened")

// ErrLinked: a file that must have one name has several hard links.
var ErrLinked = errors.New("has other hard links")

// singleLink closes f and refuses it when it has more than one hard link.
func singleLink[F File](name string, f F) error {
	fi, err := f.Stat()
	if err == nil {
		if n, ok := LinkCount(fi); ok && n > 1 {
			err = fmt.Errorf("%s: %w", name, ErrLinked)
		}
	}
	if err != nil {
		f.Close()
	}
	return err
}

// comparable reports whether os.SameFile can tell fi apart (it came from
// the os package; a test file system's may not).
func comparable(fi fs.FileInfo) bool { return os.SameFile(fi, fi) }

// OpenOrCreate opens name as Open does, creating it when it is missing,
// and never through a symlink in its place: a file a process keeps beside
// another (a lock, a lease, an intent record) and writes at offsets would
// otherwise write into whatever a link planted there leads to. The create
// is exclusive (O_EXCL does not follow a link, not even a dangling one);
// an existing file is opened with lstat as the check, so a link is
// refused, and one swapped in after the check is refused too
// (ErrChanged). An existing file with another hard link is refused too
// (ErrLinked): the other name can be anyone's file, a session included,
// and a link is made as easily as a symlink. created reports which it was.
func OpenOrCreate[F File](name string, flag int, perm fs.FileMode, lstat func(name string) (fs.FileInfo, error), open func(name string, flag int, perm fs.FileMode) (F, error)) (f F, created bool, err error) {
	flag &^= os.O_CREATE | os.O_EXCL | os.O_TRUNC
	// The file is there most of the time: open it first. One created
	// between the check and the create, or removed between the create's
	// failure and the next check, is looked at once more; three times in
	// a row is someone racing on purpose.
	for range 3 {
		f, err = Open(name, flag, 0, lstat, open)
		if err == nil {
			err = singleLink(name, f)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return f, false, err
		}
		f, err = Open(name, flag|os.O_CREATE|os.O_EXCL, perm, nil, open)
		if !errors.Is(err, fs.ErrExist) {
			return f, err == nil, err
		}
	}
	return f, false, err
}
