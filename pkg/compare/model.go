package compare

import (
	"math"
	"math/rand/v2"
	"time"
)

// expectedQPS is the model of SPEC §7 for one mode: the ConfigMap GETs per
// second at the apiserver and the reads per second at etcd, in steady
// state (after warm-up), for the pods and ConfigMaps of nodes, the sync
// frequency and the TTL in effect.
//
//   - every-sync and get: every periodic sync remounts every volume with a
//     quorum read: volumes / E[X] at both, X being the sync interval.
//   - first-reference: each ConfigMap cached on a node is refreshed, at
//     resourceVersion "0" (etcd never sees it), by the first remount at or
//     after lastFetch + T. See refreshRate.
//   - watch: no GETs.
func expectedQPS(nodes []nodeLayout, syncFrequency time.Duration, mode Mode, ttl time.Duration) (apiserver, etcd float64) {
	mean, _ := syncIntervalMoments(syncFrequency)
	volumes := 0
	for _, node := range nodes {
		volumes += node.volumes()
	}
	switch mode {
	case ModeEverySync, ModeGet:
		return float64(volumes) / mean, float64(volumes) / mean
	case ModeWatch:
		return 0, 0
	}
	rates := map[int]float64{} // by pods sharing the entry
	for _, node := range nodes {
		for _, k := range node.referencesPerConfigMap() {
			if _, ok := rates[k]; !ok {
				rates[k] = refreshRate(syncFrequency, ttl, k)
			}
			apiserver += rates[k]
		}
	}
	return apiserver, 0
}

// refreshRate is how often one node refreshes one cached ConfigMap that k
// of its pods mount, in first-reference mode, per second.
//
// SPEC §7's closed form, 1/(T + E[X²]/(2E[X])) for one pod, holds when T is
// several sync intervals; when T is shorter than an interval every remount
// refreshes and the rate is 1/E[X], and for k pods the wait past expiry
// shrinks. Rather than patch formulas, this simulates the k pods' sync
// renewal processes (interval S·(1+U[0,0.5)) + U[0,1) s, random phases)
// with the cache's rule, over thousands of cycles, from a fixed seed: the
// result is deterministic and exact to well under 1 %.
func refreshRate(s, ttl time.Duration, k int) float64 {
	rng := rand.New(rand.NewPCG(uint64(s), uint64(ttl)^uint64(k)))
	S, T := s.Seconds(), ttl.Seconds()
	interval := func() float64 { return S*(1+0.5*rng.Float64()) + rng.Float64() }
	mean, _ := syncIntervalMoments(s)
	cycle := T + mean
	warmup, horizon := 20*cycle, 4000*cycle
	next := make([]float64, k)
	for i := range next {
		next[i] = rng.Float64() * mean
	}
	lastFetch, refreshes := math.Inf(-1), 0
	for {
		// The pod whose sync comes first remounts the volume.
		first := 0
		for i := range next {
			if next[i] < next[first] {
				first = i
			}
		}
		now := next[first]
		if now > warmup+horizon {
			break
		}
		if now >= lastFetch+T { // not fresh: now < lastFetch + TTL is fresh
			lastFetch = now
			if now > warmup {
				refreshes++
			}
		}
		next[first] += interval()
	}
	return float64(refreshes) / horizon
}

// refreshCycle is the mean time between two refreshes of a ConfigMap that
// one pod mounts.
func refreshCycle(syncFrequency, ttl time.Duration) time.Duration {
	return time.Duration(float64(time.Second) / refreshRate(syncFrequency, ttl, 1))
}
