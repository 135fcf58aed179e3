// Package coreclient is an API client for the core/v1 resources a node
// agent uses: pods, nodes and ConfigMaps to read and watch, events to post,
// and the Secret the admission webhook keeps its certificates in.
//
// It exists for memory. client-go's clientset (and its typed core client,
// which imports the same scheme) registers every API group's types when the
// process starts, which keeps about 7 MiB resident in a process that uses
// one group (docs/performance.md, "Where the memory is"). This client's
// scheme holds the core group alone, and it builds its requests on
// client-go's REST client itself rather than through client-go's generic
// typed client (gentype), which links server-side apply and its schemas
// (about 0.5 MiB of a binary that is nearly all resident). Its requests
// are the ones client-go's typed clients send, so the apiserver cannot
// tell the two apart.
package coreclient

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// Scheme knows the core/v1 types and the meta/v1 options, nothing else.
// Event recorders take it to name the objects that events are about.
var Scheme = runtime.NewScheme()

var (
	codecs         = serializer.NewCodecFactory(Scheme)
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	// corev1.AddToScheme also registers meta/v1's options and watch
	// events under the core group version, which requests encode.
	utilruntime.Must(corev1.AddToScheme(Scheme))
}

// Client sends core/v1 requests through one rate-limited REST client.
type Client struct {
	rest rest.Interface
}

// NewForConfig returns a client for config's apiserver, with config's rate
// limits, wire format and user agent; config is not modified.
func NewForConfig(config *rest.Config) (*Client, error) {
	c := rest.CopyConfig(config)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	restClient, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the core/v1 REST client: %w", err)
	}
	return &Client{rest: restClient}, nil
}

// Pods of namespace; "" is every namespace.
func (c *Client) Pods(namespace string) *Resource[*corev1.Pod, *corev1.PodList] {
	return &Resource[*corev1.Pod, *corev1.PodList]{client: c.rest, resource: "pods", namespace: namespace, protobuf: true,
		newItem: func() *corev1.Pod { return &corev1.Pod{} }, newList: func() *corev1.PodList { return &corev1.PodList{} }}
}

// Nodes of the cluster.
func (c *Client) Nodes() *Resource[*corev1.Node, *corev1.NodeList] {
	return &Resource[*corev1.Node, *corev1.NodeList]{client: c.rest, resource: "nodes", protobuf: true,
		newItem: func() *corev1.Node { return &corev1.Node{} }, newList: func() *corev1.NodeList { return &corev1.NodeList{} }}
}

// ConfigMaps of namespace.
func (c *Client) ConfigMaps(namespace string) *Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return &Resource[*corev1.ConfigMap, *corev1.ConfigMapList]{client: c.rest, resource: "configmaps", namespace: namespace, protobuf: true,
		newItem: func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		newList: func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} }}
}

// Secrets of namespace (the admission webhook's certificates).
func (c *Client) Secrets(namespace string) *Resource[*corev1.Secret, *corev1.SecretList] {
	return &Resource[*corev1.Secret, *corev1.SecretList]{client: c.rest, resource: "secrets", namespace: namespace, protobuf: true,
		newItem: func() *corev1.Secret { return &corev1.Secret{} }, newList: func() *corev1.SecretList { return &corev1.SecretList{} }}
}

// Events of namespace. Unlike the other resources, they keep the config's
// wire format even when it is unset: client-go's event sink posts through
// hand-written methods that do not prefer protobuf, and so does this one.
func (c *Client) Events(namespace string) *Resource[*corev1.Event, *corev1.EventList] {
	return &Resource[*corev1.Event, *corev1.EventList]{client: c.rest, resource: "events", namespace: namespace,
		newItem: func() *corev1.Event { return &corev1.Event{} }, newList: func() *corev1.EventList { return &corev1.EventList{} }}
}

// EventSink posts a record.EventBroadcaster's events in each event's own
// namespace, as client-go's EventSinkImpl does.
func (c *Client) EventSink() record.EventSink { return eventSink{c} }

type eventSink struct{ client *Client }

func (s eventSink) Create(event *corev1.Event) (*corev1.Event, error) {
	return s.client.Events(event.Namespace).Create(context.TODO(), event, metav1.CreateOptions{})
}

func (s eventSink) Update(event *corev1.Event) (*corev1.Event, error) {
	return s.client.Events(event.Namespace).Update(context.TODO(), event, metav1.UpdateOptions{})
}

func (s eventSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.client.Events(event.Namespace).Patch(context.TODO(), event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
