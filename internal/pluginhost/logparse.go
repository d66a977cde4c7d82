package pluginhost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/termsafe"
)

// maxLogLine bounds one re-logged line when no limit is configured; the
// rest of a longer line is dropped and the line marked truncated, so a
// plugin cannot make the host buffer an unbounded amount of memory.
const maxLogLine = 64 << 10

// logWriter turns a plugin's stderr into host log lines. go-plugin hands it
// the raw stream in pieces (a line, then its newline, long lines in chunks),
// so it assembles whole lines itself. JSON lines from the SDK's hclog logger
// are re-logged with their level, message and fields; anything else is
// logged as text. It never fails and never panics, whatever it is fed:
// go-plugin's own parser panics on a non-string @message, which is why it is
// switched off.
type logWriter struct {
	log hclog.Logger
	// maxLine bounds one line (limits.stderrLineBytes); limit, when set,
	// caps lines and bytes per second across the plugin's streams.
	maxLine int
	limit   *relayLimit
	// said, when set, keeps the last lines relayed, for the report of the
	// plugin's failure (stderr only: the stdio stream's stdout is data).
	said *lastWords

	mu        sync.Mutex
	buf       []byte
	truncated bool
	inPanic   bool
}

func newLogWriter(log hclog.Logger) *logWriter { return &logWriter{log: log, maxLine: maxLogLine} }

// newLimitedLogWriter is a logWriter under a plugin's stderr limits.
func newLimitedLogWriter(log hclog.Logger, maxLine int, limit *relayLimit, said *lastWords) *logWriter {
	return &logWriter{log: log, maxLine: maxLine, limit: limit, said: said}
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := w.maxLine - len(w.buf); len(chunk) > room {
			w.buf = append(w.buf, chunk[:room]...)
			w.truncated = true
			w.limit.droppedTail(len(chunk) - room)
		} else {
			w.buf = append(w.buf, chunk...)
		}
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a final line that had no newline, and what the limit dropped
// and has not reported yet.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit()
	}
	w.reportDropped(w.limit.pending())
}

func (w *logWriter) reportDropped(lines, bytes int64) {
	if lines > 0 || bytes > 0 {
		w.log.Warn("plugin output over its limits was dropped", "lines", lines, "bytes", bytes,
			"limits", "stderrLinesPerSecond, stderrBytesPerSecond, stderrLineBytes")
	}
}

func (w *logWriter) emit() {
	line := bytes.TrimRight(w.buf, "\r")
	truncated := w.truncated
	defer func() {
		w.buf, w.truncated = w.buf[:0], false
		if cap(w.buf) > 4*1024 {
			w.buf = nil // do not keep a huge buffer after one huge line
		}
	}()
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	ok, dl, db := w.limit.admit(len(line))
	w.reportDropped(dl, db)
	if !ok {
		return
	}
	if !truncated && line[0] == '{' {
		if level, msg, kv, ok := parseJSONLine(line); ok {
			w.said.add(msg)
			w.log.Log(level, msg, kv...)
			return
		}
	}
	text := sanitize(line)
	var kv []any
	if truncated {
		kv = append(kv, "truncated", true)
	}
	level := hclog.Info
	switch {
	case w.inPanic:
		level = hclog.Debug
	case strings.HasPrefix(text, "panic: "), strings.HasPrefix(text, "fatal error: "):
		// A Go runtime crash report: everything after it is the trace,
		// shown at debug level. The first line is the crash's reason,
		// which the report of the crash (or of the call it failed)
		// gives in one line.
		w.inPanic = true
		w.said.crashed(text)
		level = hclog.Debug
	default:
		level, text = levelPrefix(text)
		w.said.add(text)
	}
	w.log.Log(level, text, kv...)
}

// levelPrefix recognises the "[INFO] msg" convention of the standard logger.
func levelPrefix(s string) (hclog.Level, string) {
	for _, p := range []struct {
		prefix string
		level  hclog.Level
	}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info}, {"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}} {
		if strings.HasPrefix(s, p.prefix) {
			return p.level, strings.TrimSpace(s[len(p.prefix):])
		}
	}
	return hclog.Info, s
}

// skippedKeys are hclog's bookkeeping fields; the host adds its own.
var skippedKeys = map[string]bool{"@message": true, "@level": true, "@timestamp": true, "@module": true, "@caller": true}

func parseJSONLine(line []byte) (hclog.Level, string, []any, bool) {
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil || m == nil {
		return 0, "", nil, false
	}
	level := hclog.Info
	if s, ok := m["@level"].(string); ok {
		if l := hclog.LevelFromString(s); l != hclog.NoLevel && l != hclog.Off {
			level = l
		}
	}
	var msg string
	switch v := m["@message"].(type) {
	case nil:
	case string:
		msg = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			msg = fmt.Sprint(v)
		} else {
			msg = string(b)
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !skippedKeys[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	kv := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		// hclog writes keys raw and quotes only top-level strings; a
		// nested value is logged as its JSON, escaped like the rest.
		v := m[k]
		switch x := v.(type) {
		case string:
			v = sanitize([]byte(x))
		case map[string]any, []any:
			if b, err := json.Marshal(v); err == nil {
				v = sanitize(b)
			}
		}
		kv = append(kv, sanitize([]byte(k)), v)
	}
	return level, sanitize([]byte(msg)), kv, true
}

// sanitize makes arbitrary bytes safe to log: no control, bidi or
// invisible format characters that could forge log lines, move a
// terminal's cursor or disguise text (termsafe.Line, the escaper of every
// terminal output).
func sanitize(b []byte) string { return termsafe.Line(string(b)) }
