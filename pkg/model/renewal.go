package model

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"time"
)

// SyncIntervalMoments returns the mean and the mean square, in seconds, of
// the time between two periodic syncs of a pod at sync frequency s: the
// requeue delay s·(1 + U[0,0.5)) plus the wait U[0,1) s for the next 1 s
// tick.
func SyncIntervalMoments(s time.Duration) (mean, meanSquare float64) {
	sec := s.Seconds()
	mean = 1.25*sec + 0.5
	variance := (0.5*sec)*(0.5*sec)/12 + 1.0/12
	return mean, variance + mean*mean
}

// MeanSyncInterval is E[X] at sync frequency s.
func MeanSyncInterval(s time.Duration) time.Duration {
	mean, _ := SyncIntervalMoments(s)
	return time.Duration(mean * float64(time.Second))
}

// SyncTickRate is how many quorum GETs per second one node sends, with the
// EverySync behaviour, for one object that k of its pods read. Every sync
// drops the cached object, and the volume manager remounts a tick's pods
// together after their syncs, so the GETs are the 1 s ticks in which at
// least one of the k pods comes due: 1/E[X] for one pod, approaching one
// per second as k grows. Each pod's next sync is at the first tick strictly
// after S·(1 + U[0, 0.5)). The k pods' renewal processes are simulated on
// the tick grid from a fixed seed, in many short replicas with fresh random
// phases: at small S the intervals take one or two values, the pods' phases
// never mix within one long run, and only an average over phases gives the
// expectation. Deterministic, and within 1 % of it.
func SyncTickRate(s time.Duration, k int) float64 {
	mean, _ := SyncIntervalMoments(s)
	if k <= 1 {
		return 1 / mean
	}
	rng := rand.New(rand.NewPCG(uint64(s), uint64(k)))
	S := s.Seconds()
	interval := func() int64 { return int64(math.Floor(S*(1+0.5*rng.Float64()))) + 1 }
	const replicas, measured = 400, 1000        // ticks measured per replica
	warmup := 2 * (int64(math.Ceil(1.5*S)) + 1) // two of the longest intervals
	next := make([]int64, k)
	ticks := 0
	for range replicas {
		for i := range next {
			// Somewhere in an interval of its own: at S = 2 s, where
			// every interval is 3 ticks, each phase equally likely.
			next[i] = rng.Int64N(interval())
		}
		for tick := int64(0); tick < warmup+measured; tick++ {
			due := false
			for i := range next {
				if next[i] == tick {
					due = true
					next[i] += interval()
				}
			}
			if due && tick >= warmup {
				ticks++
			}
		}
	}
	return float64(ticks) / (replicas * measured)
}

// RefreshRate is how often one node refreshes one cached object that k of
// its pods read, with the FirstReference behaviour, per second.
//
// The closed form, 1/(T + E[X²]/(2E[X])) for one pod, holds when T is
// several sync intervals; when T is shorter than an interval every remount
// refreshes and the rate is 1/E[X], and for k pods the wait past expiry
// shrinks. Rather than patch formulas, this simulates the k pods' sync
// renewal processes (interval S·(1+U[0,0.5)) + U[0,1) s, random phases)
// with the cache's rule, over hundreds to thousands of refresh cycles (fewer
// the more pods share the entry, since the cycle then varies less), from a
// fixed seed: the result is deterministic and exact to well under 1 %.
func RefreshRate(s, ttl time.Duration, k int) float64 {
	mean, _ := SyncIntervalMoments(s)
	if ttl <= 0 {
		// Nothing is ever fresh: every remount refreshes.
		return float64(k) / mean
	}
	rng := rand.New(rand.NewPCG(uint64(s), uint64(ttl)^uint64(k)))
	S, T := s.Seconds(), ttl.Seconds()
	interval := func() float64 { return S*(1+0.5*rng.Float64()) + rng.Float64() }
	cycle := T + mean
	// The more pods share the entry, the less one refresh cycle varies
	// (the wait past expiry shrinks as 1/k), so fewer cycles give the
	// same precision, and the work stays near that of one pod.
	cycles := max(400, 4000/float64(max(k, 1)))
	warmup, horizon := 20*cycle, cycles*cycle
	next := make(syncTimes, k)
	for i := range next {
		next[i] = rng.Float64() * mean
	}
	heap.Init(&next)
	lastFetch, refreshes := math.Inf(-1), 0
	for next[0] <= warmup+horizon {
		// The pod whose sync comes first remounts the volume.
		now := next[0]
		if now >= lastFetch+T { // not fresh: now < lastFetch + TTL is fresh
			lastFetch = now
			if now > warmup {
				refreshes++
			}
		}
		next[0] += interval()
		heap.Fix(&next, 0)
	}
	return float64(refreshes) / horizon
}

// syncTimes is a min-heap of the pods' next sync times.
type syncTimes []float64

func (h syncTimes) Len() int           { return len(h) }
func (h syncTimes) Less(i, j int) bool { return h[i] < h[j] }
func (h syncTimes) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *syncTimes) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *syncTimes) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// RefreshCycle is the mean time between two refreshes of an object that
// one pod reads, with the FirstReference behaviour.
func RefreshCycle(syncFrequency, ttl time.Duration) time.Duration {
	return time.Duration(float64(time.Second) / RefreshRate(syncFrequency, ttl, 1))
}

// GetCycle is the mean time between two GETs of one pod's volume with
// behaviour b: a refresh cycle for FirstReference at a positive TTL, a
// sync interval otherwise.
func GetCycle(b Behaviour, syncFrequency, ttl time.Duration) time.Duration {
	if b == FirstReference && ttl > 0 {
		return RefreshCycle(syncFrequency, ttl)
	}
	return MeanSyncInterval(syncFrequency)
}
