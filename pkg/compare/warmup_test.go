package compare

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// A warm-up gives up only when the agents stop making progress: past its
// allowance and with no new volume for the stall window. A slow machine
// that keeps mounting is waited for.
func TestVolumeProgressGivesUpOnlyOnAStall(t *testing.T) {
	const allowance, stall = 4 * time.Minute, time.Minute
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	type step struct {
		after   time.Duration // since start
		mounted int
		stuck   bool
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"nothing mounts: gives up at the allowance", []step{
			{time.Minute, 0, false}, {allowance - time.Second, 0, false}, {allowance + time.Second, 0, true},
		}},
		{"slow but steady: waited for past the allowance", []step{
			{time.Minute, 100, false}, {allowance, 900, false}, {allowance + 50*time.Second, 1200, false},
			{allowance + 100*time.Second, 1700, false}, {allowance + 150*time.Second, 1800, false},
		}},
		{"stops half way: gives up a stall window after the last volume", []step{
			{time.Minute, 900, false}, {allowance - 10*time.Second, 1000, false},
			{allowance + 30*time.Second, 1000, false}, {allowance + 51*time.Second, 1000, true},
		}},
		{"a stall before the allowance is waited out", []step{
			{10 * time.Second, 5, false}, {3 * time.Minute, 5, false}, {allowance - time.Second, 6, false},
			{allowance + 30*time.Second, 6, false}, {allowance + 62*time.Second, 6, true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := clocktesting.NewFakePassiveClock(start)
			p := newVolumeProgress(clock, start, allowance, stall)
			for _, s := range tt.steps {
				clock.SetTime(start.Add(s.after))
				if got := p.stuck(s.mounted); got != s.stuck {
					t.Errorf("at %s with %d volumes: stuck %v, want %v", s.after, s.mounted, got, s.stuck)
				}
			}
		})
	}
}

// countingPhase counts volumes node by node, as the processes fleet does.
type countingPhase struct{ byNode map[string]int }

func (p countingPhase) VolumesMounted(context.Context) (int, error) { return 0, nil }
func (p countingPhase) Counters(context.Context) (Counters, error) {
	return Counters{}, ErrNoAgentMetrics
}
func (p countingPhase) VolumesMountedByNode(context.Context) (map[string]int, string, error) {
	return p.byNode, "/logs", nil
}

// A stalled warm-up names the nodes behind, where the fleet can count them.
func TestBehindNamesTheNodesBehind(t *testing.T) {
	node := func(name string, pods int) model.Node {
		n := model.Node{Name: name}
		for range pods {
			n.Pods = append(n.Pods, model.Pod{Volumes: 2})
		}
		return n
	}
	nodes := []model.Node{node("a", 3), node("b", 3), node("c", 1)}
	got := behind(context.Background(), countingPhase{map[string]int{"a": 6, "b": 2}}, nodes)
	if want := "behind: b (2 of 6), c (0 of 2); their logs are NODE.log in /logs"; got != want {
		t.Errorf("behind = %q, want %q", got, want)
	}
	var many []model.Node
	for i := range 10 {
		many = append(many, node(fmt.Sprintf("n%d", i), 1))
	}
	if got := behind(context.Background(), countingPhase{}, many); !strings.Contains(got, "n7 (0 of 2) and 2 more;") {
		t.Errorf("ten nodes behind: %q, want eight named and 2 more", got)
	}
	if got := behind(context.Background(), struct{ Phase }{}, nodes); got != "see the agents' logs" {
		t.Errorf("a fleet that cannot count by node: %q", got)
	}
}
