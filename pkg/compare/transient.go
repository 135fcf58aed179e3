package compare

import (
	"math"
	"math/rand/v2"
	"time"
)

// window is a node's measured interval, in seconds since its agent started.
type window struct{ from, to float64 }

// firstSyncDelay is when, after an agent starts, its pods have their first
// sync: as soon as the pod informer has listed them, all at once.
const firstSyncDelay = 0.05

// sharedEntryRate is the expected GETs per second that one node sends, in
// mode, for one cache entry that k of its pods read, over w. It follows the
// run as it happens: at the agent's start every pod syncs at once, so the k
// pods begin in lockstep and drift apart only as their jittered intervals
// differ, which at small S (intervals of one or two whole ticks) takes many
// cycles. The pods are simulated on the agent's 1 s tick grid, each due at
// the first tick strictly after S·(1 + U[0, 0.5)) past its last sync:
//
//   - every-sync: one GET per tick in which any of the k pods is due;
//   - first-reference: one GET at the first such tick at least T after the
//     last fetch (the first fetch being at the first sync).
//
// The expectation is over many replicas from a fixed seed: deterministic.
func sharedEntryRate(mode Mode, s, ttl time.Duration, k int, w window) float64 {
	const replicas = 300
	rng := rand.New(rand.NewPCG(uint64(s)^uint64(ttl), uint64(k)<<32|uint64(w.from*10)))
	S, T := s.Seconds(), ttl.Seconds()
	jittered := func() float64 { return S * (1 + 0.5*rng.Float64()) }
	next := make([]int64, k)
	gets := 0
	for range replicas {
		for i := range next {
			next[i] = int64(math.Floor(firstSyncDelay+jittered())) + 1
		}
		lastFetch := firstSyncDelay
		for tick := int64(1); float64(tick) < w.to; tick++ {
			due := false
			for i := range next {
				if next[i] == tick {
					due = true
					next[i] = tick + int64(math.Floor(jittered())) + 1
				}
			}
			if !due {
				continue
			}
			get := mode == ModeEverySync
			if mode == ModeFirstReference && float64(tick) >= lastFetch+T {
				get, lastFetch = true, float64(tick)
			}
			if get && float64(tick) >= w.from {
				gets++
			}
		}
	}
	return float64(gets) / replicas / (w.to - w.from)
}

// measuredWindows gives each node's measured window, in seconds since its
// agent started, for a measurement from start lasting d; nodes whose
// agent's start the fleet does not know are left out.
func measuredWindows(f fleet, nodes []nodeLayout, start time.Time, d time.Duration) map[string]window {
	windows := map[string]window{}
	for _, n := range nodes {
		if started, ok := f.startedAt(n.name); ok {
			from := start.Sub(started).Seconds()
			windows[n.name] = window{from: from, to: from + d.Seconds()}
		}
	}
	return windows
}
