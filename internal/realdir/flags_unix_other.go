//go:build unix && !linux

package realdir

import "golang.org/x/sys/unix"

// walkFlags open each directory of the walk: without Linux's O_PATH, for
// reading, so a directory with search but no read permission is refused.
const walkFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
