package inprocess

import (
	"os"
	"syscall"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/procstat"
)

// The agents run in this process, so the process's own CPU time and memory
// are theirs (plus a little for the sampling itself).

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS restarts the kernel's peak-RSS counter (VmHWM), so each
// phase reports its own peak. Without permission it does nothing and the
// peak is the process's.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// rss is the process's resident memory now, in bytes (VmRSS).
func rss() int64 { return procstat.KB("/proc/self/status", "VmRSS:") * 1024 }

// peakRSS is the process's peak resident memory in bytes (VmHWM).
func peakRSS() int64 { return procstat.KB("/proc/self/status", "VmHWM:") * 1024 }
