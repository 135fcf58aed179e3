package compare

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/mixing"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
)

// PodPhases is where in its sync cycle each pod is when a phase's window
// opens.
type PodPhases int

const (
	// PhasesMixed: each pod's syncs are out of step with its node's other
	// pods, as on a node that has run a while, whose pods started at
	// different times. What the model's steady state assumes, and what
	// `nodeagent analyze` predicts for a live cluster.
	PhasesMixed PodPhases = iota
	// PhasesTogether: every pod of a node syncs first when its agent
	// starts, as right after a kubelet restart; the pods that share an
	// object share more of its GETs until the sync jitter pulls them
	// apart, in about six sync intervals (8 minutes at S = 1 m).
	PhasesTogether
)

var podPhasesNames = map[PodPhases]string{PhasesMixed: "mixed", PhasesTogether: "together"}

func (p PodPhases) String() string { return podPhasesNames[p] }

// ParsePodPhases reads a --pod-phases value.
func ParsePodPhases(s string) (PodPhases, error) {
	for p, name := range podPhasesNames {
		if s == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("--pod-phases %q: want mixed or together", s)
}

// mixPodPhases mixes the pods' sync phases (package mixing), with the
// window opening at start, 2·S from now, and returns at start.
func (r *runner) mixPodPhases(ctx context.Context, mode modes.Mode, start time.Time) error {
	began := time.Now()
	schedule := mixing.Schedule(r.nodes, r.scenario.SyncFrequency, rand.New(rand.NewPCG(uint64(start.UnixNano()), 0)))
	err := mixing.Apply(ctx, r.admin.CoreV1().Pods(r.namespace), schedule, fmt.Sprintf("%s-%d", mode, start.Unix()), start, func(done int) {
		r.progress.Status("%-19s mixing   %5.0fs left  pods updated %d/%d (each syncs at once)", mode, time.Until(start).Seconds(), done, len(schedule))
	})
	if err != nil {
		return err
	}
	r.progress.Done("%-19s mixing done in %.0fs: %d pod updates, so that each pod syncs out of step with its node's others", mode, time.Since(began).Seconds(), len(schedule))
	return nil
}
