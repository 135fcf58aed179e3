package controlplane

import (
	"path/filepath"
	"strconv"
)

// etcdArgs runs a single-member etcd on loopback. fsync is off: the data is
// thrown away after the run, and fsync on a shared CI disk would dominate
// the latency that the apiserver's metrics report.
func etcdArgs(dir, clientURL, peerURL string) []string {
	return []string{
		"--name=nodeagent",
		"--data-dir=" + filepath.Join(dir, "etcd-data"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=nodeagent=" + peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

// apiserverArgs configures kube-apiserver the way a real cluster is
// configured where it matters to nodeagent (RBAC, service accounts, client
// certificates, default watch cache and request limits), and leaves out what
// needs other components.
func apiserverArgs(c *credentials, etcdURL string, port int) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// No --tls-cert-file: the apiserver generates a self-signed
		// serving certificate here at its first start and reuses it after.
		"--cert-dir=" + c.servingCertDir,
		"--client-ca-file=" + c.clientCAFile,
		// The node proxy (/api/v1/nodes/NAME/proxy/...) reaches a
		// kubelet at its InternalIP, authenticated by the admin
		// certificate, which the kubelets' --client-ca-file trusts.
		"--kubelet-client-certificate=" + c.adminCertFile,
		"--kubelet-client-key=" + c.adminKeyFile,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// As on a real cluster: a node's identity may read only its own
		// Node, its pods, and the ConfigMaps they reference.
		"--authorization-mode=Node,RBAC",
		"--audit-policy-file=" + c.auditPolicyFile,
		"--audit-log-path=" + c.auditLogFile,
		"--audit-log-format=json",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.serviceAccountPub,
		"--service-account-signing-key-file=" + c.serviceAccountKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The default admission plugins, ServiceAccount included: every pod
		// gets the kube-api-access projected volume, as on a real cluster.
		// The controller manager's serviceaccount and root-ca-cert-publisher
		// controllers make the ServiceAccount and kube-root-ca.crt it needs.
		// The endpoint reconciler would publish 127.0.0.1 as the kubernetes
		// Service's endpoint, which Endpoints validation rejects.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		// On SIGTERM, end open watches (the controller manager's, the
		// agents') instead of waiting for their clients to hang up, which
		// holds a restart for the full 30 s stop grace period.
		"--shutdown-watch-termination-grace-period=2s",
		"--profiling=false",
		"--v=1",
	}
}
