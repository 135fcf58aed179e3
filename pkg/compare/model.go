package compare

import (
	"math"
	"math/rand/v2"
	"time"
)

// expectedQPS is the load model of docs/model.md for one mode: the
// ConfigMap GETs per second at the apiserver and the reads per second at
// etcd, in steady state (after warm-up), for the pods and volumes of nodes,
// the sync frequency and the TTL in effect.
//
//   - get: every remount reads every ConfigMap its volume uses with a
//     quorum GET: reads / E[X] at both, X being the sync interval.
//   - every-sync: every sync invalidates the pod's cached ConfigMaps, and
//     the remounts that follow send one quorum GET per ConfigMap; pods of a
//     node that come due in the same 1 s tick share it. See syncTickRate.
//     At T = 0 (every cluster under 100 nodes) nothing is ever fresh, so
//     the tick's other remounts of a shared entry each refresh it at
//     resourceVersion "0": the apiserver sees every remount, etcd the ticks.
//   - first-reference: each ConfigMap cached on a node is refreshed, at
//     resourceVersion "0" (etcd never sees it), by the first remount at or
//     after lastFetch + T. See refreshRate.
//   - watch: no GETs.
func expectedQPS(nodes []nodeLayout, syncFrequency time.Duration, mode Mode, ttl time.Duration) (apiserver, etcd float64) {
	mode = mode.behaviour()
	mean, _ := syncIntervalMoments(syncFrequency)
	switch mode {
	case ModeGet:
		reads := 0
		for _, node := range nodes {
			reads += node.configMapReads()
		}
		return float64(reads) / mean, float64(reads) / mean
	case ModeWatch, ModeWatchAtSync:
		return 0, 0
	}
	if mode == ModeEverySync {
		ticks := map[int]float64{} // by pods sharing the entry
		for _, node := range nodes {
			for _, k := range node.referencesPerConfigMap() {
				if _, ok := ticks[k]; !ok {
					ticks[k] = syncTickRate(syncFrequency, k)
				}
				etcd += ticks[k]
				if ttl <= 0 {
					apiserver += float64(k) / mean
				} else {
					apiserver += ticks[k]
				}
			}
		}
		return apiserver, etcd
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

// syncTickRate is how many quorum GETs per second one node sends, in
// every-sync mode, for one ConfigMap that k of its pods read. Every sync
// drops the cached object, and the volume manager remounts a tick's pods
// together after their syncs, so the GETs are the 1 s ticks in which at
// least one of the k pods comes due: 1/E[X] for one pod, approaching one
// per second as k grows. Each pod's next sync is at the first tick strictly
// after S·(1 + U[0, 0.5)). The k pods' renewal processes are simulated on
// the tick grid from a fixed seed, in many short replicas with fresh random
// phases: at small S the intervals take one or two values, the pods' phases
// never mix within one long run, and only an average over phases gives the
// expectation. Deterministic, and within 1 % of it.
func syncTickRate(s time.Duration, k int) float64 {
	mean, _ := syncIntervalMoments(s)
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

// refreshRate is how often one node refreshes one cached ConfigMap that k
// of its pods mount, in first-reference mode, per second.
//
// The closed form, 1/(T + E[X²]/(2E[X])) for one pod, holds when T is
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
