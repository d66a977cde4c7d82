package pluginhost

import (
	"strings"
	"sync"
)

// lastWordsLines and lastWordsLineBytes bound what is kept of a plugin's
// stderr for the report of its failure: a few short lines.
const (
	lastWordsLines     = 3
	lastWordsLineBytes = 300
)

// lastWords keeps what a plugin's process last wrote on stderr, so that
// the one line reporting its failure — it exited at start, it crashed
// during a call — says what the plugin itself said: the last few lines,
// and the first line of a Go runtime crash report ("panic: …", "fatal
// error: …"), whose trace follows it and is no reason of its own.
type lastWords struct {
	mu    sync.Mutex
	lines [lastWordsLines]string
	next  int // index of the next line to write in the ring
	count int // lines kept, at most lastWordsLines
	crash string
}

func (l *lastWords) add(line string) {
	if l == nil {
		return
	}
	line = shorten(strings.TrimSpace(line))
	if line == "" {
		return
	}
	l.mu.Lock()
	l.lines[l.next] = line
	l.next = (l.next + 1) % lastWordsLines
	l.count = min(l.count+1, lastWordsLines)
	l.mu.Unlock()
}

// crashed records the first line of a crash report; later ones (a panic
// while panicking) are part of the same report.
func (l *lastWords) crashed(line string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.crash == "" {
		l.crash = shorten(strings.TrimSpace(line))
	}
	l.mu.Unlock()
}

// String is the crash report's first line if there was one, else the last
// lines, oldest first, joined by " | "; "" when the plugin said nothing.
func (l *lastWords) String() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.crash != "" {
		return l.crash
	}
	out := make([]string, 0, l.count)
	for i := range l.count {
		out = append(out, l.lines[(l.next-l.count+i+lastWordsLines)%lastWordsLines])
	}
	return strings.Join(out, " | ")
}

func shorten(s string) string {
	if len(s) <= lastWordsLineBytes {
		return s
	}
	cut := lastWordsLineBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// crashReason is why the instance's process ended, for the one line that
// reports it: the first line of its crash report (a Go panic's value), else
// how it exited and what it last wrote on stderr, else fallback. Call it
// once go-plugin has seen the process exit.
func (in *instance) crashReason(fallback string) string {
	if c := in.said.crashLine(); c != "" {
		return c
	}
	exit := ""
	if in.cmd != nil {
		exit = exitedBy(in.cmd)
	}
	said := in.said.String()
	switch {
	case exit != "" && said != "":
		return exit + "; its stderr ended with: " + said
	case exit != "":
		return exit
	case said != "":
		return fallback + "; its stderr ended with: " + said
	}
	return fallback
}

func (l *lastWords) crashLine() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.crash
}
