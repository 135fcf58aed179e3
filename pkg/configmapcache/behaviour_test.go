package configmapcache

import (
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Every behaviour of the model has the agent settings of its own name.
func TestEveryBehaviourHasSettings(t *testing.T) {
	want := map[model.Behaviour]setting{
		model.Get:            {model.StrategyGet, InvalidateFirstReference},
		model.EverySync:      {model.StrategyCache, InvalidateEverySync},
		model.FirstReference: {model.StrategyCache, InvalidateFirstReference},
		model.Watch:          {model.StrategyWatch, InvalidateFirstReference},
	}
	for _, b := range model.Behaviours {
		strategy, invalidation, err := ForBehaviour(b)
		if err != nil {
			t.Fatalf("ForBehaviour(%s): %v", b, err)
		}
		if got := (setting{strategy, invalidation}); got != want[b] {
			t.Errorf("ForBehaviour(%s) = %v, want %v", b, got, want[b])
		}
	}
	if _, _, err := ForBehaviour("poll"); err == nil {
		t.Error("ForBehaviour(poll): no error")
	}
}
