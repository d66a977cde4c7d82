//go:build !unix

package regularfile

// NoBlock is 0 where opens have no non-blocking flag.
const NoBlock = 0
