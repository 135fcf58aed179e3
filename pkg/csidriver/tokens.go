package csidriver

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// tokensKey is where the kubelet hands over the pod's tokens that the
// CSIDriver object's tokenRequests ask for: in a publish call's secrets
// where the CSIDriver sets serviceAccountTokenInSecrets (v1.35 on), in its
// volume context before.
const tokensKey = "csi.storage.k8s.io/serviceAccount.tokens"

// ReadAs says whose permission the driver reads ConfigMaps with.
type ReadAs string

const (
	// ReadAsPod reads each volume's ConfigMap with its pod's service
	// account token, which the kubelet passes in every publish call
	// (tokenRequests): the driver's own account may read nothing, and a
	// pod reads only what its service account may.
	ReadAsPod ReadAs = "pod"
	// ReadAsDriver reads with the driver's own service account, which then
	// needs get, list and watch on ConfigMaps: any pod may mount any
	// ConfigMap of its namespace, as from the kubelet.
	ReadAsDriver ReadAs = "driver"
)

// podToken is one pod's service account token for the apiserver (the
// CSIDriver asks for the apiserver's own audience), bound to the pod: it
// stops working when the pod goes. It formats as a placeholder, so that no
// log, record or error can hold it.
type podToken struct {
	value   string
	expires time.Time
}

// expired says whether t no longer works at now; a token whose expiry the
// kubelet did not say is taken to work.
func (t podToken) expired(now time.Time) bool { return !t.expires.IsZero() && !t.expires.After(now) }

func (podToken) String() string   { return "<pod token>" }
func (podToken) GoString() string { return "<pod token>" }

// tokenOf is the pod's token from a publish call's secrets or volume
// context; ok is false where the call carries none (a CSIDriver object
// without tokenRequests). The error never quotes the attribute.
func tokenOf(secrets, volumeContext map[string]string) (t podToken, ok bool, err error) {
	raw, ok := secrets[tokensKey]
	if !ok {
		raw, ok = volumeContext[tokensKey]
	}
	if !ok {
		return podToken{}, false, nil
	}
	var byAudience map[string]struct {
		Token               string    `json:"token"`
		ExpirationTimestamp time.Time `json:"expirationTimestamp"`
	}
	if err := json.Unmarshal([]byte(raw), &byAudience); err != nil {
		return podToken{}, false, fmt.Errorf("%s is not the kubelet's tokens by audience", tokensKey)
	}
	// The CSIDriver's token request names no audience: the apiserver's.
	tok, found := byAudience[""]
	if !found || tok.Token == "" {
		return podToken{}, false, fmt.Errorf("%s holds no token for the apiserver's own audience: the CSIDriver object's tokenRequests must have one with no audience", tokensKey)
	}
	return podToken{value: tok.Token, expires: tok.ExpirationTimestamp}, true, nil
}

// withoutTokens is a volume context without the pod's tokens: what a
// record keeps and compares.
func withoutTokens(volumeContext map[string]string) map[string]string {
	if _, ok := volumeContext[tokensKey]; !ok {
		return volumeContext
	}
	out := maps.Clone(volumeContext)
	delete(out, tokensKey)
	return out
}
