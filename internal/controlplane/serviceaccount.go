package controlplane

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// RootCAConfigMap is the ConfigMap that root-ca-cert-publisher writes into
// every namespace and every pod's kube-api-access volume reads.
const RootCAConfigMap = "kube-root-ca.crt"

// WaitForServiceAccount waits until namespace has its default
// ServiceAccount, without which the ServiceAccount admission plugin refuses
// every pod, and its kube-root-ca.crt ConfigMap, without which pods'
// kube-api-access volumes cannot mount. The controllers make both moments
// after a namespace is created.
func WaitForServiceAccount(ctx context.Context, client kubernetes.Interface, namespace string, timeout time.Duration) error {
	var missing string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if _, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			missing = "ServiceAccount default"
			return false, ignoreNotFound(err)
		}
		// A LIST, not a GET: tests count the ConfigMap GETs the apiserver
		// serves, and this wait is not one of them.
		list, err := client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + RootCAConfigMap})
		if err != nil {
			return false, err
		}
		missing = "ConfigMap " + RootCAConfigMap
		return len(list.Items) == 1, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s has no %s after %s (are the serviceaccount and root-ca-cert-publisher controllers running?): %w", namespace, missing, timeout, err)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (cp *ControlPlane) waitForDefaultServiceAccount(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	if err := WaitForServiceAccount(ctx, client, metav1.NamespaceDefault, cp.timeout); err != nil {
		return fmt.Errorf("%w\n%s", err, cp.Logs(30))
	}
	return nil
}
