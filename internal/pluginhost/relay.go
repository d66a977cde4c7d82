package pluginhost

import (
	"sync"
	"sync/atomic"
	"time"
)

// relayLimit caps how much of one plugin's output (stderr, and the stdio
// streams go-plugin forwards) reaches the host's log: lines and bytes per
// one-second window. What is over is dropped without being parsed, so a
// plugin flooding its stderr costs the host a read and a count per line,
// and the drops are reported once per window as one log line.
type relayLimit struct {
	linesPerSec, bytesPerSec int

	mu           sync.Mutex
	window       time.Time
	lines, bytes int
	// dropped in the current window, reported when the next one starts.
	droppedLines, droppedBytes int64

	// Totals since start, for tests and diagnostics.
	totalDroppedLines, totalDroppedBytes atomic.Int64
}

func newRelayLimit(linesPerSec, bytesPerSec int) *relayLimit {
	return &relayLimit{linesPerSec: linesPerSec, bytesPerSec: bytesPerSec}
}

// admit reports whether a line of n bytes may be relayed now. When a new
// window starts it also returns what the previous windows dropped, for the
// caller to report.
func (r *relayLimit) admit(n int) (ok bool, reportLines, reportBytes int64) {
	if r == nil {
		return true, 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.window) >= time.Second {
		r.window, r.lines, r.bytes = now, 0, 0
		reportLines, reportBytes = r.droppedLines, r.droppedBytes
		r.droppedLines, r.droppedBytes = 0, 0
	}
	if r.lines >= r.linesPerSec || r.bytes+n > r.bytesPerSec {
		r.dropped(1, int64(n))
		return false, reportLines, reportBytes
	}
	r.lines++
	r.bytes += n
	return true, reportLines, reportBytes
}

// dropped counts output discarded without being offered to admit (the
// cut-off tail of an over-long line). The caller holds r.mu.
func (r *relayLimit) dropped(lines, bytes int64) {
	r.droppedLines += lines
	r.droppedBytes += bytes
	r.totalDroppedLines.Add(lines)
	r.totalDroppedBytes.Add(bytes)
}

// droppedTail counts the bytes cut off an over-long line.
func (r *relayLimit) droppedTail(n int) {
	if r == nil || n == 0 {
		return
	}
	r.mu.Lock()
	r.droppedBytes += int64(n)
	r.mu.Unlock()
	r.totalDroppedBytes.Add(int64(n))
}

// pending returns and resets what was dropped and not yet reported.
func (r *relayLimit) pending() (lines, bytes int64) {
	if r == nil {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	lines, bytes = r.droppedLines, r.droppedBytes
	r.droppedLines, r.droppedBytes = 0, 0
	return lines, bytes
}
