package pluginhost

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// relayLimit caps how much of one plugin's output (stderr, and the stdio
// streams go-plugin forwards) reaches the host's log: lines and bytes per
// second, each a token bucket (golang.org/x/time/rate) that holds one
// second's worth. What is over is dropped without being parsed, so a
// plugin flooding its stderr costs the host a read and a count per line,
// and the drops are reported at most once a second as one log line.
type relayLimit struct {
	lines, bytes *rate.Limiter

	mu sync.Mutex
	// reported is when drops were last reported; dropped* are those not
	// reported yet, reported by the first line offered a second later.
	reported                   time.Time
	droppedLines, droppedBytes int64

	// Totals since start, for tests and diagnostics.
	totalDroppedLines, totalDroppedBytes atomic.Int64
}

func newRelayLimit(linesPerSec, bytesPerSec int) *relayLimit {
	return &relayLimit{
		lines: rate.NewLimiter(rate.Limit(linesPerSec), linesPerSec),
		bytes: rate.NewLimiter(rate.Limit(bytesPerSec), bytesPerSec),
	}
}

// admit reports whether a line of n bytes may be relayed now. At most once
// a second it also returns what was dropped since the last report, for
// the caller to report.
func (r *relayLimit) admit(n int) (ok bool, reportLines, reportBytes int64) {
	if r == nil {
		return true, 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.reported) >= time.Second {
		r.reported = now
		reportLines, reportBytes = r.droppedLines, r.droppedBytes
		r.droppedLines, r.droppedBytes = 0, 0
	}
	// Both buckets must have room before either is spent: a line refused
	// for its bytes does not use up a line. r.mu makes check and spend one
	// step.
	if r.lines.TokensAt(now) < 1 || r.bytes.TokensAt(now) < float64(n) {
		r.dropped(1, int64(n))
		return false, reportLines, reportBytes
	}
	r.lines.AllowN(now, 1)
	r.bytes.AllowN(now, n)
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
