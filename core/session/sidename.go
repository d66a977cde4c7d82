package session

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// ArchiveSuffix names the sidecar archive of a session file's pruned
// originals: SideName("", FILE, ArchiveSuffix), next to the session (a
// link's target). It is part of the layout every files reader knows: a
// listing of sessions leaves a session's archive out.
const ArchiveSuffix = ".pruned.jsonl"

// NameMax is the longest name of one path component that common file
// systems take (NAME_MAX: ext4, xfs, btrfs, tmpfs, APFS count bytes).
const NameMax = 255

// sideHashLen is how many hex digits of the session name's SHA-256 stand
// for the part of it a cut side file name leaves out.
const sideHashLen = 16

// SideName is the name of a file Pith keeps beside the file name (a base
// name, no directory): prefix + name + suffix — a temp file, an archive,
// an intent sidecar — as long as that fits in NameMax bytes. A name too
// long to leave room for prefix and suffix (pi takes any name the file
// system does) is cut, on a character boundary, and followed by "~" and
// 16 hex digits of the SHA-256 of the whole name, so the side files of
// two long names that share their start stay apart. "~" is outside the
// grammar of the daemon's session names, so a cut name is never one a
// client can open as a session. It is the one naming of every such file,
// so every writer and reader finds the same one.
func SideName(prefix, name, suffix string) string {
	return SideStem(prefix, name, len(suffix)) + suffix
}

// SideStem is the start of SideName(prefix, name, suffix) for any suffix
// of room bytes: what the side files of name with a random part (temp
// files) share, so that the ones a killed writer left can be found.
func SideStem(prefix, name string, room int) string {
	if len(prefix)+len(name)+room <= NameMax {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(name))
	keep := max(NameMax-room-len(prefix)-1-sideHashLen, 0)
	for keep > 0 && !utf8.RuneStart(name[keep]) {
		keep--
	}
	return prefix + name[:keep] + "~" + hex.EncodeToString(sum[:])[:sideHashLen]
}
