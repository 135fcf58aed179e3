package csidriver

import (
	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// watchSet are the driver's watches, one per object its volumes read:
// the node service's objectWatches. secrets is nil outside the Secrets
// mode, where no volume that reads a Secret is served.
type watchSet struct {
	configMaps *configmapcache.Watches
	secrets    *configmapcache.SecretWatches
}

func (w watchSet) Add(ref objectRef) {
	if ref.kind == model.Secret {
		w.secrets.Add(ref.namespace, ref.name)
		return
	}
	w.configMaps.Add(ref.namespace, ref.name)
}

func (w watchSet) Remove(ref objectRef) {
	if ref.kind == model.Secret {
		w.secrets.Remove(ref.namespace, ref.name)
		return
	}
	w.configMaps.Remove(ref.namespace, ref.name)
}

// reopen lists and watches ref anew, with the client its watch asks for
// now (another pod's token).
func (w watchSet) reopen(ref objectRef) {
	if ref.kind == model.Secret {
		w.secrets.Reopen(ref.namespace, ref.name)
		return
	}
	w.configMaps.Reopen(ref.namespace, ref.name)
}

func (w watchSet) watching() int {
	n := w.configMaps.Watching()
	if w.secrets != nil {
		n += w.secrets.Watching()
	}
	return n
}

func (w watchSet) stop() {
	w.configMaps.Stop()
	if w.secrets != nil {
		w.secrets.Stop()
	}
}
