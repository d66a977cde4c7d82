package pluginhost

import (
	"os"

	"golang.org/x/sys/unix"
)

// memorySocketBase is a directory in memory under which this user may make
// private directories for plugin sockets, or "" when there is none:
//   - XDG_RUNTIME_DIR, the per-user directory meant for sockets, when it is
//     a directory this user owns that no one else may enter (an inherited
//     variable can name another user's);
//   - /dev/shm when it is a tmpfs that, like /tmp, everyone may write to
//     with the sticky bit set, so that no other user can remove or rename
//     what this one makes there.
func memorySocketBase() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" && ownPrivateDir(dir) {
		return dir
	}
	const shm = "/dev/shm"
	if sharedMemoryDir(shm) {
		return shm
	}
	return ""
}

// ownPrivateDir: dir is a directory owned by this user, closed to others,
// and writable.
func ownPrivateDir(dir string) bool {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	return int(st.Uid) == os.Geteuid() && st.Mode&0o077 == 0 && unix.Access(dir, unix.W_OK|unix.X_OK) == nil
}

// sharedMemoryDir: dir is a sticky, world-writable directory on tmpfs.
func sharedMemoryDir(dir string) bool {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	if st.Mode&unix.S_ISVTX == 0 || st.Mode&0o003 != 0o003 {
		return false
	}
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		return false
	}
	return unix.Access(dir, unix.W_OK|unix.X_OK) == nil
}
