package configmapcache

import (
	"fmt"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// setting is a strategy with its invalidation: the agent's cache options.
type setting struct {
	strategy     model.Strategy
	invalidation Invalidation
}

// settings are the options with which the agent behaves as each of the
// load model's behaviours (whose table, model.KubeletRules, says which
// kubelet releases and strategies behave so). The invalidation matters to
// the cache strategy only; the others take the flag's default.
var settings = map[model.Behaviour]setting{
	model.Get:            {model.StrategyGet, InvalidateFirstReference},
	model.EverySync:      {model.StrategyCache, InvalidateEverySync},
	model.FirstReference: {model.StrategyCache, InvalidateFirstReference},
	model.Watch:          {model.StrategyWatch, InvalidateFirstReference},
}

// ForBehaviour is the strategy and invalidation with which the agent
// behaves as b.
func ForBehaviour(b model.Behaviour) (model.Strategy, Invalidation, error) {
	s, ok := settings[b]
	if !ok {
		return "", "", fmt.Errorf("configmapcache: no settings behave as %q", b)
	}
	return s.strategy, s.invalidation, nil
}
