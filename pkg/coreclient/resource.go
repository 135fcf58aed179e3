package coreclient

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is what a resource's items are: a typed API object with a name.
type object interface {
	runtime.Object
	GetName() string
}

// Resource sends the requests of one core/v1 resource (in one namespace,
// or across all of them) that the agent makes: Get, List and Watch to
// read, Create, Update and Patch for events. Each request is the one
// client-go's typed client of the resource sends: same verb, path, query,
// headers and body, which TestRequestsAreClientGosRequests holds.
type Resource[T object, L runtime.Object] struct {
	client    rest.Interface
	resource  string
	namespace string
	// protobuf is whether the resource asks for protobuf when the
	// client's config names no wire format, as client-go's typed clients
	// of built-in resources do (events are the exception: client-go posts
	// them through methods that keep the config's format).
	protobuf bool
	newItem  func() T
	newList  func() L
}

// on scopes a request to the resource and its namespace.
func (r *Resource[T, L]) on(req *rest.Request) *rest.Request {
	return req.UseProtobufAsDefaultIfPreferred(r.protobuf).
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.resource)
}

// Get reads one object by name.
func (r *Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	item := r.newItem()
	err := r.on(r.client.Get()).Name(name).VersionedParams(&opts, parameterCodec).Do(ctx).Into(item)
	return item, err
}

// List reads the objects opts selects.
func (r *Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	list := r.newList()
	err := r.on(r.client.Get()).VersionedParams(&opts, parameterCodec).Timeout(serverTimeout(opts)).Do(ctx).Into(list)
	return list, err
}

// Watch streams the changes to the objects opts selects.
func (r *Resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.on(r.client.Get()).VersionedParams(&opts, parameterCodec).Timeout(serverTimeout(opts)).Watch(ctx)
}

// Create posts a new object.
func (r *Resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	item := r.newItem()
	err := r.on(r.client.Post()).VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(item)
	return item, err
}

// Update replaces an object.
func (r *Resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	item := r.newItem()
	err := r.on(r.client.Put()).Name(obj.GetName()).VersionedParams(&opts, parameterCodec).Body(obj).Do(ctx).Into(item)
	return item, err
}

// Patch changes part of an object.
func (r *Resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (T, error) {
	item := r.newItem()
	err := r.on(r.client.Patch(pt)).Name(name).VersionedParams(&opts, parameterCodec).Body(data).Do(ctx).Into(item)
	return item, err
}

// serverTimeout is the client-side timeout a list or watch asks the
// server for, so that the two end together; zero when it asks for none.
func serverTimeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
