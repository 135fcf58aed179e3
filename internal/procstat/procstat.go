// Package procstat reads what a process has used, and what the machine
// has left, from Linux's /proc: CPU time, resident memory and its peak, and
// the memory available. On other systems, or for a process that is gone,
// every figure is zero.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Usage is what a process has used: CPU time (user and system), resident
// memory now (VmRSS) and at its peak (VmHWM).
type Usage struct {
	CPU          time.Duration
	RSS, PeakRSS int64
}

// Of reads a process's usage from /proc; zero for pid 0 or a process
// that is gone.
func Of(pid int) Usage {
	if pid == 0 {
		return Usage{}
	}
	var cpu time.Duration
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the parenthesised command name; utime and stime are
		// the 14th and 15th fields, in clock ticks (100 per second).
		if end := strings.LastIndexByte(string(stat), ')'); end > 0 {
			fields := strings.Fields(string(stat)[end+1:])
			if len(fields) > 12 {
				utime, _ := strconv.ParseInt(fields[11], 10, 64)
				stime, _ := strconv.ParseInt(fields[12], 10, 64)
				cpu = time.Duration(utime+stime) * 10 * time.Millisecond
			}
		}
	}
	status := fmt.Sprintf("/proc/%d/status", pid)
	return Usage{CPU: cpu, RSS: KB(status, "VmRSS:") * 1024, PeakRSS: KB(status, "VmHWM:") * 1024}
}

// KB reads one "Name: N kB" line of a /proc status file (or of
// /proc/meminfo); 0 when it is not there.
func KB(path, field string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == field {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb
		}
	}
	return 0
}
