package webhook

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// configScheme knows admissionregistration/v1 alone: client-go's clientset
// would register every API group in the image's binary, which the agent
// shares (pkg/coreclient says what that costs).
var configScheme = runtime.NewScheme()

func init() { utilruntime.Must(admissionregistrationv1.AddToScheme(configScheme)) }

// restConfigurations is a ConfigurationClient on a REST client of the
// admissionregistration.k8s.io/v1 group alone.
type restConfigurations struct{ rest rest.Interface }

// NewConfigurationClient returns a ConfigurationClient for config's
// apiserver; config is not modified.
func NewConfigurationClient(config *rest.Config) (ConfigurationClient, error) {
	c := rest.CopyConfig(config)
	c.GroupVersion = &admissionregistrationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(configScheme, serializer.NewCodecFactory(configScheme)).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the admissionregistration/v1 REST client: %w", err)
	}
	return restConfigurations{client}, nil
}

const configurations = "mutatingwebhookconfigurations"

func (c restConfigurations) Get(ctx context.Context, name string, _ metav1.GetOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	out := &admissionregistrationv1.MutatingWebhookConfiguration{}
	return out, c.rest.Get().Resource(configurations).Name(name).Do(ctx).Into(out)
}

func (c restConfigurations) Update(ctx context.Context, config *admissionregistrationv1.MutatingWebhookConfiguration, _ metav1.UpdateOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	out := &admissionregistrationv1.MutatingWebhookConfiguration{}
	return out, c.rest.Put().Resource(configurations).Name(config.Name).Body(config).Do(ctx).Into(out)
}
