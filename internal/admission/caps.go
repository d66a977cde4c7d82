package admission

// maxPerListener bounds a derived cap however high the descriptor limit:
// past a few thousand connections it is memory (each has its buffers and
// goroutines once it spoke), not descriptors, that runs out.
const maxPerListener = 4096

// DefaultCaps are the caps of each of n listeners when the configuration
// sets none, derived from the descriptor limit nofile: the listeners
// share half of it — the other half is headroom for what the process
// opens besides connections (session files and their directories,
// plugins' pipes, watches) — up to 4096 each, and one remote address may
// hold a quarter of a listener's. A limit too small to split gives the
// smallest useful caps; an unknown one (0: no such limit here) counts
// as 8192.
func DefaultCaps(nofile uint64, n int) Caps {
	n = max(n, 1)
	if nofile == 0 {
		nofile = 8192
	}
	per := min(nofile/2/uint64(n), maxPerListener)
	total := max(int(per), 16)
	return Caps{Total: total, PerKey: max(total/4, 4)}
}

// Resolve fills the caps a configuration left at 0 from DefaultCaps.
func Resolve(total, perAddress int, nofile uint64, n int) Caps {
	d := DefaultCaps(nofile, n)
	if total > 0 {
		d.Total = total
		if perAddress == 0 {
			d.PerKey = max(total/4, 1)
		}
	}
	if perAddress > 0 {
		d.PerKey = perAddress
	}
	d.PerKey = min(d.PerKey, d.Total)
	return d
}
