// Command pause is the pod sandbox's process: it holds the pod's namespaces
// open, reaps the zombies that end up with it as PID 1, and exits on SIGINT or
// SIGTERM. The images kubeadm and containerd name as registry.k8s.io/pause are
// built from it where no registry can be reached.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		os.Stderr.WriteString("pause: warning: not running as PID 1\n")
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
