package controlplane

import "syscall"

// childProcAttr puts a child in its own process group, so that a terminal's
// Ctrl-C reaches only this process, which decides the order of shutdown;
// and, if this process dies without calling stop (a test binary killed by a
// timeout), has the kernel kill the child: nothing is left behind.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
