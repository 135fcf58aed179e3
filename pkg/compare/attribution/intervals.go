package attribution

import (
	"sort"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
)

// A class's GETs per second in a short window are a coarse figure for an
// object a node reads every half minute: a node reads its kube-root-ca.crt
// seven or eight times in four minutes, by where its cycle falls, so the
// count of thirty nodes moves by a few per cent from run to run. The mean
// interval between one node's consecutive reads of one object does not
// depend on where the cycles fall, and the model gives it too: the class's
// object-node pairs over their GET/s.
//
// Only intervals with both reads in the window are taken, since the reads
// before it may still show the mixing of the pods' phases (an update's
// sync that found the entry fresh puts off the next read). A window of W
// seconds holds an interval of x seconds with a chance in proportion to
// W − x, so each is weighted by 1/(W − x): the weighted mean estimates the
// renewal process's mean interval without the short intervals' advantage.

// classIntervals sums one class's weighted intervals between reads.
type classIntervals struct {
	weights, weightedSeconds float64
	// pairs are the object-node pairs of the class read in the phase.
	pairs int
}

// mean is the weighted mean interval in seconds, 0 without one.
func (c classIntervals) mean() float64 {
	if c.weights == 0 {
		return 0
	}
	return c.weightedSeconds / c.weights
}

// measureIntervals groups gets (the run's nodes', since the phase started)
// by object and node, and sums by class the intervals between consecutive
// reads that both fall in [from, to).
func measureIntervals(gets []auditlog.Get, from, to time.Time) map[ObjectClass]classIntervals {
	type pair struct{ user, namespace, name string }
	byPair := map[pair][]time.Time{}
	for _, g := range gets {
		p := pair{g.User, g.Namespace, g.Name}
		byPair[p] = append(byPair[p], g.Received)
	}
	window := to.Sub(from).Seconds()
	out := map[ObjectClass]classIntervals{}
	for p, times := range byPair {
		// The log is nearly, not exactly, in the order received.
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		c := out[classOf(p.name)]
		c.pairs++
		for i := 1; i < len(times); i++ {
			if times[i-1].Before(from) || !times[i].Before(to) {
				continue
			}
			x := times[i].Sub(times[i-1]).Seconds()
			w := 1 / (window - x)
			c.weights += w
			c.weightedSeconds += w * x
		}
		out[classOf(p.name)] = c
	}
	return out
}
