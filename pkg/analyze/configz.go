package analyze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// kubeletConfig is what analyze takes from a kubelet's /configz.
type kubeletConfig struct {
	Strategy      model.Strategy
	SyncFrequency time.Duration
	// FeatureGates are the gates the kubelet was given (not its defaults).
	FeatureGates map[string]bool
}

// parseConfigz decodes a kubelet's /configz body tolerantly: the envelope
// key and the fields' casing have changed between releases, and a newer
// kubelet adds apiVersion and kind. A missing strategy is the kubelet's
// default, Watch; a missing sync frequency its default, one minute.
func parseConfigz(body []byte) (kubeletConfig, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return kubeletConfig{}, fmt.Errorf("/configz is not a JSON object: %w", err)
	}
	config := top
	if raw, ok := lookup(top, "kubeletconfig"); ok {
		config = nil
		if err := json.Unmarshal(raw, &config); err != nil {
			return kubeletConfig{}, fmt.Errorf("/configz's kubeletconfig is not a JSON object: %w", err)
		}
	} else if !holdsKubeletConfig(top) {
		// A process that serves /configz without registering its
		// configuration answers {}: nothing to read, not the defaults.
		return kubeletConfig{}, errors.New("/configz holds no kubelet configuration (no kubeletconfig key)")
	}
	c := kubeletConfig{Strategy: model.StrategyWatch, SyncFrequency: time.Minute}
	if raw, ok := lookup(config, "configMapAndSecretChangeDetectionStrategy"); ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return c, fmt.Errorf("/configz's configMapAndSecretChangeDetectionStrategy: %w", err)
		}
		if s != "" {
			st, err := model.ParseStrategy(s)
			if err != nil {
				return c, fmt.Errorf("/configz: %w", err)
			}
			c.Strategy = st
		}
	}
	if raw, ok := lookup(config, "featureGates"); ok {
		if err := json.Unmarshal(raw, &c.FeatureGates); err != nil {
			return c, fmt.Errorf("/configz's featureGates: %w", err)
		}
	}
	if raw, ok := lookup(config, "syncFrequency"); ok {
		d, err := parseDuration(raw)
		if err != nil {
			return c, fmt.Errorf("/configz's syncFrequency: %w", err)
		}
		if d > 0 {
			c.SyncFrequency = d
		}
	}
	return c, nil
}

// holdsKubeletConfig reports whether m, a /configz body without the
// kubeletconfig envelope, has a field only a kubelet configuration has.
func holdsKubeletConfig(m map[string]json.RawMessage) bool {
	for _, key := range []string{"configMapAndSecretChangeDetectionStrategy", "syncFrequency", "kind"} {
		if _, ok := lookup(m, key); ok {
			return true
		}
	}
	return false
}

// lookup finds key in m whatever its case.
func lookup(m map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// parseDuration takes a duration as the kubelet's API writes it ("1m0s"),
// or as nanoseconds, bare or in {"Duration": n}.
func parseDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return time.ParseDuration(s)
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		return time.Duration(n), nil
	}
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(raw, &wrapped); err == nil {
		if inner, ok := lookup(wrapped, "Duration"); ok {
			return parseDuration(inner)
		}
	}
	return 0, fmt.Errorf("not a duration: %s", raw)
}

// configzReader reads kubelets' /configz through the apiserver's node
// proxy.
type configzReader interface {
	// allowed reports whether the caller may get nodes/proxy, and if
	// not, why.
	allowed(ctx context.Context) (bool, string, error)
	read(ctx context.Context, node string) ([]byte, error)
}

// proxyConfigz is configzReader over a clientset.
type proxyConfigz struct{ client kubernetes.Interface }

func (p proxyConfigz) allowed(ctx context.Context) (bool, string, error) {
	review, err := p.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Resource: "nodes", Subresource: "proxy",
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("asking whether this user may get nodes/proxy: %w", err)
	}
	return review.Status.Allowed, review.Status.Reason, nil
}

func (p proxyConfigz) read(ctx context.Context, node string) ([]byte, error) {
	body, err := p.client.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", node, "proxy", "configz").
		Timeout(10 * time.Second).
		DoRaw(ctx)
	if err != nil {
		return nil, errors.New(firstLine(err.Error()))
	}
	return body, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
