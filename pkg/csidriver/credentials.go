package csidriver

import (
	"sync"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// objectRef names one ConfigMap or Secret that volumes read.
type objectRef struct {
	kind            model.Kind
	namespace, name string
}

// credentials are, per object the driver watches, the tokens of the
// volumes whose pods' own read of it succeeded (ReadAsPod). Its one watch
// per node is opened with the holder's token that expires last, and opened
// again with another's before that one expires or its pod goes: a bound
// token stops working with its pod.
type credentials struct {
	mu       sync.Mutex
	byObject map[objectRef]map[string]podToken
	// inUse is the token each watch was last opened with, and by whom.
	inUse map[objectRef]holder
}

// holder is one volume's token.
type holder struct {
	volumeID string
	token    podToken
}

func newCredentials() *credentials {
	return &credentials{byObject: map[objectRef]map[string]podToken{}, inUse: map[objectRef]holder{}}
}

// hold records volumeID's token for key, after its pod's read of it
// succeeded. It says whether the watch should be opened again: it has no
// working token (none yet, or one that expired), and now has one.
func (c *credentials) hold(key objectRef, volumeID string, t podToken, now time.Time) (reopen bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byObject[key] == nil {
		c.byObject[key] = map[string]podToken{}
	}
	c.byObject[key][volumeID] = t
	used, ok := c.inUse[key]
	return !ok || used.token.expired(now)
}

// release forgets volumeID's token for key, its volume gone. It says
// whether the watch should be opened again: it was opened with that token,
// which dies with its pod, and another holder has one.
func (c *credentials) release(key objectRef, volumeID string) (reopen bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byObject[key], volumeID)
	if len(c.byObject[key]) == 0 {
		delete(c.byObject, key)
		delete(c.inUse, key)
		return false
	}
	return c.inUse[key].volumeID == volumeID
}

// tokenOf is the token volumeID holds for key, if any.
func (c *credentials) tokenOf(key objectRef, volumeID string) (podToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.byObject[key][volumeID]
	return t, ok
}

// take is the token to open key's watch with, the one that expires last,
// and records it as the watch's; ok is false where no pod's read of key
// has succeeded yet.
func (c *credentials) take(key objectRef) (podToken, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	best, ok := c.bestLocked(key)
	if ok {
		c.inUse[key] = best
	}
	return best.token, ok
}

func (c *credentials) bestLocked(key objectRef) (holder, bool) {
	var best holder
	found := false
	for id, t := range c.byObject[key] {
		if !found || t.expires.After(best.token.expires) || t.expires.Equal(best.token.expires) && id < best.volumeID {
			best, found = holder{volumeID: id, token: t}, true
		}
	}
	return best, found
}

// expiring are the watches whose token expires within margin of now while
// a holder has one that expires later: to be opened again with it.
func (c *credentials) expiring(now time.Time, margin time.Duration) []objectRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []objectRef
	for key, used := range c.inUse {
		if !used.token.expired(now.Add(margin)) {
			continue
		}
		if best, ok := c.bestLocked(key); ok && best.token.expires.After(used.token.expires) {
			out = append(out, key)
		}
	}
	return out
}
