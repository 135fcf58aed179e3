package configmapcache

import (
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func TestEveryBehaviourHasSettings(t *testing.T) {
	for _, b := range model.Behaviours {
		strategy, invalidation, err := ForBehaviour(b)
		if err != nil {
			t.Fatalf("ForBehaviour(%s): %v", b, err)
		}
		if got := BehaviourOf(strategy, invalidation); got != b {
			t.Errorf("BehaviourOf(ForBehaviour(%s)) = %s", b, got)
		}
	}
	if _, _, err := ForBehaviour("poll"); err == nil {
		t.Error("ForBehaviour(poll): no error")
	}
	// The invalidation flag means nothing outside the cache strategy.
	if got := BehaviourOf(StrategyWatch, InvalidateEverySync); got != model.Watch {
		t.Errorf("BehaviourOf(watch, every-sync) = %s, want watch", got)
	}
}
