//go:build !linux

package controlplane

import "syscall"

// childProcAttr puts a child in its own process group, so that a terminal's
// Ctrl-C reaches only this process, which decides the order of shutdown.
// Only Linux kills the children of a process that dies without stopping
// them; the control plane's binaries are built for Linux alone (make
// controlplane), so elsewhere compare needs --kubeconfig.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
