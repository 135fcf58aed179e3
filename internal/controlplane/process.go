package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one control-plane binary that can be started, stopped and
// started again with the same arguments. Its stdout and stderr are appended
// to one log file that survives restarts.
type process struct {
	name    string
	path    string
	args    []string
	logPath string
	env     []string // added to this process's environment
	// bare leaves the log to the process's own output.
	bare bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	err    error         // cmd's exit status, valid once exited is closed
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if !p.bare {
		fmt.Fprintf(logFile, "=== %s starting at %s: %s %s\n", p.name, time.Now().Format(time.RFC3339), p.path, strings.Join(p.args, " "))
	}
	cmd := exec.Command(p.path, p.args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// exitError returns why the process exited, or nil while it runs.
func (p *process) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return nil
	}
	select {
	case <-p.exited:
		if p.err == nil {
			return fmt.Errorf("%s exited", p.name)
		}
		return fmt.Errorf("%s exited: %w", p.name, p.err)
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to grace for the process to exit, then kills
// its whole process group. It is a no-op for a process that is not running.
func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.cmd, p.exited = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// tail returns the last n lines of the process's log, for error messages.
func (p *process) tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return lastLines(data, n)
}

func lastLines(data []byte, n int) string {
	data = bytes.TrimRight(data, "\n")
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Process is a child process run the way the control plane runs its own:
// output appended to a log file, its own process group, and killed by the
// kernel if this process dies first. Reference kubelets, the agents of
// compare --agent-processes and the e2e tests' agents run this way.
type Process struct{ p process }

// ProcessOptions are StartProcess's optional settings.
type ProcessOptions struct {
	// Env, KEY=VALUE, is added to the process's environment.
	Env []string
	// Bare leaves the log to the process's own output (a JSON log stays
	// JSON), without the line that says how and when it was started.
	Bare bool
}

// StartProcess starts path (a file, or a command looked up in $PATH) with
// args, its output appended to logPath.
func StartProcess(name, path string, args []string, logPath string, opts ProcessOptions) (*Process, error) {
	if !strings.Contains(path, "/") {
		found, err := exec.LookPath(path)
		if err != nil {
			return nil, err
		}
		path = found
	}
	if err := checkExecutable(path); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	proc := &Process{p: process{name: name, path: path, args: args, logPath: logPath, env: opts.Env, bare: opts.Bare}}
	if err := proc.p.start(); err != nil {
		return nil, err
	}
	return proc, nil
}

// Pid is the process's ID, or 0 once it was stopped.
func (p *Process) Pid() int {
	p.p.mu.Lock()
	defer p.p.mu.Unlock()
	if p.p.cmd == nil {
		return 0
	}
	return p.p.cmd.Process.Pid
}

// Err says why the process exited, or nil while it runs.
func (p *Process) Err() error { return p.p.exitError() }

// Stop sends SIGTERM, and SIGKILL to its process group after grace.
func (p *Process) Stop(grace time.Duration) { p.p.stop(grace) }

// Signal sends sig to the process, if it was not stopped.
func (p *Process) Signal(sig syscall.Signal) error {
	p.p.mu.Lock()
	defer p.p.mu.Unlock()
	if p.p.cmd == nil {
		return fmt.Errorf("%s was stopped", p.p.name)
	}
	return p.p.cmd.Process.Signal(sig)
}

// WaitExit waits up to timeout for the process to exit, and says whether it
// did. A stopped process has exited.
func (p *Process) WaitExit(timeout time.Duration) bool {
	p.p.mu.Lock()
	exited := p.p.exited
	p.p.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Tail is the last n lines of its log.
func (p *Process) Tail(n int) string { return p.p.tail(n) }
