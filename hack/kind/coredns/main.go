// Command coredns is CoreDNS with the plugins of the Corefile kubeadm
// v1.37.2 writes (errors, health, ready, kubernetes, prometheus, forward,
// cache, loop, reload, loadbalance) and no others: the node image's
// registry.k8s.io/coredns/coredns (build-node-image.sh). CoreDNS's own
// main links every plugin it ships, and with them the cloud providers'
// SDKs (route53, azure, clouddns), which every cold build compiled; a
// Corefile that names another plugin fails at its start, naming it.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics" // the "prometheus" directive
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
