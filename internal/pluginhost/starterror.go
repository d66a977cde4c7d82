package pluginhost

import (
	"fmt"
	"strings"
)

// StartError is a plugin process that did not get through go-plugin's
// handshake. Its message is one line for the person reading the log: the
// plugin's configured name, how its process ended and what it last wrote
// on stderr. go-plugin's own error (several lines: what it read, its
// notes) is Err, logged with the command at debug level when the start
// fails; errors.Is and errors.As see it.
type StartError struct {
	// Name is the plugin's configured name.
	Name string
	// Exit is how the process ended by itself ("exit status 1",
	// "signal: segmentation fault"), "" when it was still running.
	Exit string
	// Said is what it last wrote on stderr (lastWords), "" for nothing.
	Said string
	// Err is go-plugin's error.
	Err error
}

func (e *StartError) Unwrap() error { return e.Err }

// unrecognized is how go-plugin's error quotes a first stdout line that is
// no handshake.
const unrecognized = "Unrecognized remote plugin message: "

func (e *StartError) Error() string {
	var b strings.Builder
	if e.Exit != "" {
		fmt.Fprintf(&b, "plugin %s exited (%s) before its handshake", e.Name, e.Exit)
	} else {
		fmt.Fprintf(&b, "plugin %s did not start: %s", e.Name, firstLine(e.Err))
	}
	if first, ok := strings.CutPrefix(firstLine(e.Err), unrecognized); ok && first != "" {
		fmt.Fprintf(&b, "; it printed %q on stdout, which is no handshake line: is it a Pith plugin?", shorten(first))
	}
	switch {
	case e.Said != "":
		b.WriteString("; its stderr ended with: ")
		b.WriteString(e.Said)
	case e.Exit != "":
		b.WriteString("; it wrote nothing on stderr")
	}
	return b.String()
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	return strings.TrimSpace(line)
}
