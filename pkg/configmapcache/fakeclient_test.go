package configmapcache

import (
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// fakeConfigMaps is Options.ConfigMaps over client-go's fake clientset.
func fakeConfigMaps(client *fake.Clientset) func(namespace string) ConfigMapClient {
	return func(namespace string) ConfigMapClient {
		return fakeConfigMapClient{client.CoreV1().ConfigMaps(namespace)}
	}
}

// fakeConfigMapClient tells the watch strategy's reflectors that the fake
// cannot stream a watch-list, as the fake clientset itself would.
type fakeConfigMapClient struct {
	typedcorev1.ConfigMapInterface
}

func (fakeConfigMapClient) IsWatchListSemanticsUnSupported() bool { return true }
