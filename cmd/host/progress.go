package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/pith-dev/pith/internal/termsafe"
	"golang.org/x/term"
)

// progress shows a spinner with a message on a terminal while long work
// runs, and nothing at all when stderr is a pipe or a file (scripts and CI
// get clean output).
type progress struct {
	w       io.Writer
	mu      sync.Mutex
	msg     string
	start   time.Time
	stop    chan struct{}
	stopped sync.WaitGroup
}

// isTerminal asks the terminal itself (term.IsTerminal): a character
// device is not enough, /dev/null is one, and a spinner written there
// is only noise in a log that captured it.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func startProgress(w io.Writer, msg string) *progress {
	p := &progress{w: w, msg: termsafe.Line(msg), start: time.Now()}
	if !isTerminal(w) {
		return p
	}
	p.stop = make(chan struct{})
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		frames := `|/-\`
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				fmt.Fprint(p.w, "\r\033[K")
				return
			case <-t.C:
				p.mu.Lock()
				fmt.Fprintf(p.w, "\r\033[K%c %s (%.0fs)", frames[i%4], p.msg, time.Since(p.start).Seconds())
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// line prints one finished line of progress (a worker turn) above the
// spinner, or as a plain line when w is not a terminal. The line quotes
// what a model chose (tool names): escaped, as every terminal output.
func (p *progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, termsafe.Line(s))
}

// done clears the line.
func (p *progress) done() {
	if p.stop != nil {
		close(p.stop)
		p.stopped.Wait()
		p.stop = nil
	}
}
