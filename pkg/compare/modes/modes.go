// Package modes names the configurations compare measures, one phase
// each: nodeagent's agents in each behaviour of the kubelet's (every-sync,
// first-reference, watch, watch-at-sync, get), and the real kubelets
// beside them (kubelet-*). A mode is one entry of one table (modeSpecs):
// what runs, what the load model predicts for it (its behaviour, from the
// model's table of kubelet releases for a reference kubelet), what it is
// set beside and how it is drawn.
package modes

import (
	"errors"
	"fmt"
	"image/color"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Mode is one configuration of the agents measured in a phase.
type Mode string

const (
	EverySync      Mode = "every-sync"
	FirstReference Mode = "first-reference"
	Watch          Mode = "watch"
	WatchAtSync    Mode = "watch-at-sync"
	Get            Mode = "get"

	KubeletV128      Mode = "kubelet-v1.28"
	KubeletV137      Mode = "kubelet-v1.37"
	KubeletV137Watch Mode = "kubelet-v1.37-watch"
)

// modeSpec is everything a mode means, in one place: what the agents (or
// the reference kubelet) run, what the model predicts for it, what it is
// set beside, and how it is drawn. A new mode is one entry of modeSpecs.
// Behaviours come from the load model's table (model.KubeletRules): a
// reference kubelet's from its release and strategy, an agent mode's
// cache options from its behaviour (configmapcache.ForBehaviour).
type modeSpec struct {
	mode        Mode
	description string
	// behaviour is what the agents do in this mode and what the load
	// model predicts; for a reference kubelet it is filled in from the
	// kubelet's release and strategy.
	behaviour       model.Behaviour
	remountOnChange bool
	// kubelet, for a reference mode, is the real kubelet it runs.
	kubelet *ReferenceKubelet
	// pairsWith, for a reference mode, lists the nodeagent modes whose
	// requests are the kubelet's, in order of preference: the fidelity
	// line sets the first one the run measured beside it.
	pairsWith []Mode
	colour    color.RGBA
	// retiredBy, for a reference kubelet no longer built, names the mode
	// that replaced it: the records of earlier runs still name it, and
	// are read and drawn as before, but no new run measures it.
	retiredBy Mode
}

// ReferenceKubelet is the real kubelet a reference mode runs
// (hack/refkubelet): its release and its
// configMapAndSecretChangeDetectionStrategy.
type ReferenceKubelet struct {
	Release  *version.Version
	Strategy model.Strategy
}

// ReferenceKubelet is the real kubelet that mode m runs, for the fleet
// that starts it: ok is false for nodeagent's own modes.
func (m Mode) ReferenceKubelet() (k ReferenceKubelet, ok bool) {
	if k := m.spec().kubelet; k != nil {
		return *k, true
	}
	return ReferenceKubelet{}, false
}

// Binary is the reference kubelet's file name in the bin directory, as
// make refkubelet writes it: refkubelet-v<major>.<minor>.
func (k ReferenceKubelet) Binary() string {
	return fmt.Sprintf("refkubelet-v%d.%d", k.Release.Major(), k.Release.Minor())
}

// The reference kubelets' releases, as hack/refkubelet pins them.
var (
	kubeletV128 = version.MustParseGeneric("1.28.15")
	kubeletV137 = version.MustParseGeneric("1.37.2")
	// kubeletV136 is the release kubelet-v1.37 replaced, which the records
	// of earlier runs name.
	kubeletV136 = version.MustParseGeneric("1.36.3")
)

// modeSpecs lists the modes, in the order --help and the docs give them.
var modeSpecs = withKubeletBehaviours([]modeSpec{
	{
		mode: EverySync, description: "cache, invalidated on every pod sync (kubelet ≤ v1.28, before #120255)",
		behaviour: model.EverySync,
		colour:    color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red: the problem
	},
	{
		mode: FirstReference, description: "cache, invalidated on first reference only (kubelet ≥ v1.29, after #120255)",
		behaviour: model.FirstReference,
		colour:    color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue: the fix
	},
	{
		mode: Watch, description: "one watch per ConfigMap, no GETs; a change remounts its pods at once",
		behaviour: model.Watch, remountOnChange: true,
		colour: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	},
	{
		// The watch strategy without remount-on-change: a change reaches
		// disk at each pod's next sync, as with the kubelet's Watch strategy.
		mode: WatchAtSync, description: "one watch per ConfigMap, no GETs; a change reaches disk at each pod's next sync",
		behaviour: model.Watch,
		colour:    color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // teal
	},
	{
		mode: Get, description: "a quorum GET on every remount, no cache",
		behaviour: model.Get,
		colour:    color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	},
	// The reference kubelets, one process per simulated node, each drawn
	// in a lighter shade of the colour of the mode it pairs with.
	{
		mode: KubeletV128, description: "the real kubelet v1.28.15, Cache strategy (before #120255)",
		kubelet: &ReferenceKubelet{Release: kubeletV128, Strategy: model.StrategyCache}, pairsWith: []Mode{EverySync},
		colour: color.RGBA{R: 0xff, G: 0x98, B: 0x96, A: 0xff},
	},
	{
		mode: KubeletV137, description: "the real kubelet v1.37.2, Cache strategy (after #120255)",
		kubelet: &ReferenceKubelet{Release: kubeletV137, Strategy: model.StrategyCache}, pairsWith: []Mode{FirstReference},
		colour: color.RGBA{R: 0x9e, G: 0xc7, B: 0xe8, A: 0xff},
	},
	{
		// Remounting on a change sends no requests: watch's load is the
		// kubelet's Watch strategy's as much as watch-at-sync's.
		mode: KubeletV137Watch, description: "the real kubelet v1.37.2, Watch strategy",
		kubelet: &ReferenceKubelet{Release: kubeletV137, Strategy: model.StrategyWatch}, pairsWith: []Mode{WatchAtSync, Watch},
		colour: color.RGBA{R: 0x9e, G: 0xda, B: 0xe5, A: 0xff},
	},
	// Retired: the records of earlier runs name them. v1.37's ConfigMap
	// manager is v1.36's, so their rows read as the new ones do.
	{
		mode: "kubelet-v1.36", description: "the real kubelet v1.36.3, Cache strategy (after #120255)", retiredBy: KubeletV137,
		kubelet: &ReferenceKubelet{Release: kubeletV136, Strategy: model.StrategyCache}, pairsWith: []Mode{FirstReference},
		colour: color.RGBA{R: 0x9e, G: 0xc7, B: 0xe8, A: 0xff},
	},
	{
		mode: "kubelet-v1.36-watch", description: "the real kubelet v1.36.3, Watch strategy", retiredBy: KubeletV137Watch,
		kubelet: &ReferenceKubelet{Release: kubeletV136, Strategy: model.StrategyWatch}, pairsWith: []Mode{WatchAtSync, Watch},
		colour: color.RGBA{R: 0x9e, G: 0xda, B: 0xe5, A: 0xff},
	},
})

// withKubeletBehaviours fills in each reference kubelet's behaviour from
// the model's table of kubelet releases and strategies.
func withKubeletBehaviours(specs []modeSpec) []modeSpec {
	for i := range specs {
		if k := specs[i].kubelet; k != nil {
			specs[i].behaviour = model.KubeletBehaviour(k.Release, k.Strategy)
		}
	}
	return specs
}

// CacheOptions are the agent's cache options in mode m; for a reference
// kubelet, those of the agent that behaves as it does (for the report).
func (m Mode) CacheOptions() (model.Strategy, configmapcache.Invalidation) {
	s := m.spec()
	strategy, invalidation, err := configmapcache.ForBehaviour(s.behaviour)
	if err != nil {
		panic(err) // every behaviour has settings (TestEveryBehaviourHasSettings)
	}
	return strategy, invalidation
}

// Modes lists the modes a run may measure (not the retired ones).
var Modes = func() []Mode {
	var modes []Mode
	for _, s := range modeSpecs {
		if s.retiredBy == "" {
			modes = append(modes, s.mode)
		}
	}
	return modes
}()

// Known lists every mode a record may name, the retired ones included.
var Known = func() []Mode {
	var modes []Mode
	for _, s := range modeSpecs {
		modes = append(modes, s.mode)
	}
	return modes
}()

// spec is m's entry of modeSpecs; m must be valid (ParseModes).
func (m Mode) spec() *modeSpec {
	for i := range modeSpecs {
		if modeSpecs[i].mode == m {
			return &modeSpecs[i]
		}
	}
	panic(fmt.Sprintf("modes: unknown mode %q", m))
}

// IsReferenceKubelet says whether m runs the real kubelet.
func (m Mode) IsReferenceKubelet() bool { return m.spec().kubelet != nil }

// Colour is the mode's colour in every chart; black for an unknown mode
// (a report from another version).
func (m Mode) Colour() color.RGBA {
	for _, s := range modeSpecs {
		if s.mode == m {
			return s.colour
		}
	}
	return color.RGBA{A: 0xff}
}

// Describe says in a few words what a mode is.
func (m Mode) Describe() string { return m.spec().description }

// UsesWatch says whether m's agents watch ConfigMaps, which needs list and
// watch on them.
func (m Mode) UsesWatch() bool { return m.spec().behaviour == model.Watch }

// ParseModes reads a comma-separated list of modes.
func ParseModes(list string) ([]Mode, error) {
	var modes []Mode
	seen := map[Mode]bool{}
	for _, part := range strings.Split(list, ",") {
		m := Mode(strings.TrimSpace(part))
		if m == "" {
			continue
		}
		valid := false
		for _, s := range modeSpecs {
			if s.mode == m && s.retiredBy != "" {
				return nil, fmt.Errorf("mode %q is retired: %s replaces it (make refkubelet builds the kubelets the modes name)", m, s.retiredBy)
			}
			valid = valid || (m == s.mode)
		}
		if !valid {
			return nil, fmt.Errorf("unknown mode %q: choose from %v", m, Modes)
		}
		if seen[m] {
			return nil, fmt.Errorf("mode %q given twice", m)
		}
		seen[m] = true
		modes = append(modes, m)
	}
	if len(modes) == 0 {
		return nil, errors.New("no modes given: choose one or more of " + fmt.Sprint(Modes))
	}
	return modes, nil
}

// Behaviour is what the model predicts for m: the agents' behaviour, or the
// reference kubelet's from its release and strategy.
func (m Mode) Behaviour() model.Behaviour { return m.spec().behaviour }

// RemountOnChange says whether m's agents remount a volume as soon as its
// watch sees a change.
func (m Mode) RemountOnChange() bool { return m.spec().remountOnChange }

// PairsWith lists, for a reference kubelet, the nodeagent modes whose
// requests are the kubelet's, in order of preference; nil otherwise.
func (m Mode) PairsWith() []Mode { return m.spec().pairsWith }
