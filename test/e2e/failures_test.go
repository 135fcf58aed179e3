//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// A CI run shows only a part of a long, verbose e2e run: the failures'
// own messages are usually far above it, between thousands of passing
// lines. failureLog copies the test binary's standard output through
// unchanged and keeps, per test, the lines the test itself logged (t.Log
// and t.Error look the same in the output), so that the end of the run
// can say again what each failed test said.

var (
	testHeader    = regexp.MustCompile(`^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)`)
	testFailed    = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	testLogLine   = regexp.MustCompile(`^\s+\S+\.go:\d+: `)
	failureLines  = 12
	failureLength = 400
)

type failureLog struct {
	lines  map[string][]string
	failed []string
}

// parse reads go test -v output from r, writing every line to w as it
// comes.
func (l *failureLog) parse(r io.Reader, w io.Writer) {
	l.lines = map[string][]string{}
	current := ""
	in := bufio.NewReader(r)
	for {
		line, err := in.ReadString('\n')
		if line != "" {
			io.WriteString(w, line)
			text := strings.TrimRight(line, "\n")
			switch {
			case testHeader.MatchString(text):
				current = testHeader.FindStringSubmatch(text)[1]
			case testFailed.MatchString(text):
				l.failed = append(l.failed, testFailed.FindStringSubmatch(text)[1])
			case current != "" && testLogLine.MatchString(text):
				l.lines[current] = append(l.lines[current], text)
			}
		}
		if err != nil {
			return
		}
	}
}

// summary says, for each failed test none of whose subtests failed, the
// last lines it logged; "" when nothing failed.
func (l *failureLog) summary() string {
	var b strings.Builder
	for _, name := range l.failed {
		if l.hasFailedSubtest(name) {
			continue
		}
		lines := l.lines[name]
		if len(lines) > failureLines {
			lines = lines[len(lines)-failureLines:]
		}
		fmt.Fprintf(&b, "--- FAIL: %s\n", name)
		for _, line := range lines {
			if len(line) > failureLength {
				line = line[:failureLength] + " …"
			}
			fmt.Fprintln(&b, line)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return fmt.Sprintf("=== failed tests, with the last %d lines each logged (t.Log and t.Error alike):\n%s", failureLines, b.String())
}

func (l *failureLog) hasFailedSubtest(name string) bool {
	for _, other := range l.failed {
		if strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}

// captureFailures routes the process's standard output through a
// failureLog until the returned func is called, which restores it and
// returns the summary.
func captureFailures() (stop func() string) {
	original := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "not summarising failures: %v\n", err)
		return func() string { return "" }
	}
	os.Stdout = w
	log, done := &failureLog{}, make(chan struct{})
	go func() {
		defer close(done)
		log.parse(r, original)
	}()
	return func() string {
		os.Stdout = original
		w.Close()
		<-done
		r.Close()
		return log.summary()
	}
}
