package e2eutil

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DelayMeter records when each update of a delay run was sent and when
// each file first showed it. The poll and the inotify reader share it.
// Delays are kept by each file's group (DelayFile.Group).
type DelayMeter struct {
	files []DelayFile

	mu sync.Mutex
	// sentAt[c][v-1] is when update v of object c was sent.
	sentAt [][]time.Time
	// seen[j] is how many updates file j has shown.
	seen []int
	// byNotify counts, by node and object, the delays measured by a
	// read inotify prompted; measured, all of them.
	byNotify, measured map[string]int
	// arrivals holds, by group, when each update was sent and first seen in
	// each file: the delays, and what a run around a restart judges the
	// return by.
	arrivals map[string][]Arrival
	// writes are the update requests' durations, from the sending to the
	// apiserver's response: the part of each delay no volume can beat.
	writes []float64
}

// Arrival is one update reaching one file.
type Arrival struct{ Sent, Seen time.Time }

func newDelayMeter(files []DelayFile, configMaps int) *DelayMeter {
	return &DelayMeter{files: files, sentAt: make([][]time.Time, configMaps), seen: make([]int, len(files)),
		byNotify: map[string]int{}, measured: map[string]int{}, arrivals: map[string][]Arrival{}}
}

// sent records the sending of the next update of object c, before the
// request leaves, so that no file can show the update before it is known.
func (m *DelayMeter) sent(c int, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sentAt[c] = append(m.sentAt[c], at)
}

// readAll reads every file, and says whether each shows every update
// sent so far.
func (m *DelayMeter) readAll() (settled bool) {
	for j := range m.files {
		m.read(j, false)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	settled = true
	for j, f := range m.files {
		settled = settled && m.seen[j] == len(m.sentAt[f.Object])
	}
	return settled
}

// read reads file j, without the lock (reads through /proc take a while,
// and the poll's pass must not hold up inotify's), and records a delay
// for each update it shows for the first time.
func (m *DelayMeter) read(j int, notified bool) {
	f := m.files[j]
	data, err := os.ReadFile(f.Path)
	now := time.Now()
	if err != nil {
		return
	}
	value, err := strconv.Atoi(string(data))
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; m.seen[j] < min(value, len(m.sentAt[f.Object])); m.seen[j]++ {
		sent := m.sentAt[f.Object][m.seen[j]]
		m.arrivals[f.Group] = append(m.arrivals[f.Group], Arrival{Sent: sent, Seen: now})
		key := fmt.Sprintf("%s, object %d", f.Group, f.Object)
		m.measured[key]++
		if notified {
			m.byNotify[key]++
		}
	}
}

// Result returns the delays by group, in seconds.
func (m *DelayMeter) Result() map[string][]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	delays := map[string][]float64{}
	for node, arrivals := range m.arrivals {
		for _, a := range arrivals {
			delays[node] = append(delays[node], max(0, a.Seen.Sub(a.Sent).Seconds()))
		}
	}
	return delays
}

// wrote records one update request's duration.
func (m *DelayMeter) wrote(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, d.Seconds())
}

// Writes are the update requests' durations, in seconds: from the sending
// to the apiserver's response.
func (m *DelayMeter) Writes() []float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.writes)
}

// Arrivals are group's arrivals: when each update was sent and seen.
func (m *DelayMeter) Arrivals(group string) []Arrival {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.arrivals[group]
}

// watch reads a file as soon as inotify reports a change in its directory:
// the atomic writer's rename of ..data, an in-place rewrite. The paths lie
// in containers' roots seen through /proc; inotify follows them to the
// directories the writers change. It returns the reader's stop.
func (m *DelayMeter) watch() (stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	byWatch := map[int32][]int{}
	for j, f := range m.files {
		wd, err := unix.InotifyAddWatch(fd, filepath.Dir(f.Path), unix.IN_MOVED_TO|unix.IN_CREATE|unix.IN_CLOSE_WRITE|unix.IN_MODIFY)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("watching %s: %w", filepath.Dir(f.Path), err)
		}
		byWatch[int32(wd)] = append(byWatch[int32(wd)], j)
	}
	// Non-blocking, so Go's poller reads it, and Close ends the read.
	events := os.NewFile(uintptr(fd), "inotify")
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := events.Read(buf)
			if err != nil {
				return
			}
			changed := map[int32]bool{}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				changed[ev.Wd] = true
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
			for wd := range changed {
				for _, j := range byWatch[wd] {
					m.read(j, true)
				}
			}
		}
	}()
	return func() { events.Close(); <-done }, nil
}

// Notified is, by group and object, the share of the delays that a read inotify
// prompted measured: the rest have the poll's resolution.
func (m *DelayMeter) Notified() map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]float64{}
	for node, n := range m.measured {
		out[node] = float64(m.byNotify[node]) / float64(n)
	}
	return out
}
