// Package progress shows what a long run is doing, on a terminal or in a
// log.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress shows what a long run is doing. On a terminal one status line
// is redrawn in place; otherwise (CI logs, pipes) a status line is printed
// at most every 10 s, so logs stay readable.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	lastLine time.Time
	pending  bool // a status line is drawn and not yet ended
}

// New shows progress on w; nil shows none.
func New(w io.Writer) *Progress {
	p := &Progress{w: w}
	if f, ok := w.(*os.File); ok {
		p.terminal = term.IsTerminal(int(f.Fd()))
	}
	return p
}

// Status replaces the current status line.
func (p *Progress) Status(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.pending = true
		return
	}
	if time.Since(p.lastLine) >= 10*time.Second {
		fmt.Fprintln(p.w, line)
		p.lastLine = time.Now()
	}
}

// Done prints a line that stays.
func (p *Progress) Done(format string, args ...any) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending {
		fmt.Fprint(p.w, "\r\033[K")
		p.pending = false
	}
	fmt.Fprintf(p.w, format+"\n", args...)
	p.lastLine = time.Now()
}
