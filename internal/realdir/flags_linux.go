package realdir

import "golang.org/x/sys/unix"

// walkFlags open each directory of the walk. The descriptor only serves
// *at calls (fstatat, mkdirat, openat of the next one) and an fstat, so
// Linux's O_PATH does: it needs search permission on the way and none on
// the directory itself, so a directory with mode 0711 (a home directory,
// often) is passed as a path lookup passes it. O_DIRECTORY with
// O_NOFOLLOW still refuses a link (ENOTDIR).
const walkFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
