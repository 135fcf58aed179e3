package controlplane

import (
	"encoding/pem"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
)

// NodeRESTConfig returns a client configuration that authenticates as the
// kubelet of node: a new client certificate for nodeidentity.User(node) in group
// system:nodes, signed by the control plane's client CA. The apiserver's
// Node authorizer then grants it what it grants a kubelet (its own Node,
// the pods bound to it, and the ConfigMaps those pods reference), and the
// audit log attributes its requests to node.
func (cp *ControlPlane) NodeRESTConfig(node string) (*rest.Config, error) {
	return cp.UserRESTConfig(nodeidentity.User(node), nodeidentity.Group)
}

// UserRESTConfig returns a client configuration that authenticates as
// user in group, by a new client certificate signed by the control
// plane's client CA: what RBAC grants them, and nothing else.
func (cp *ControlPlane) UserRESTConfig(user, group string) (*rest.Config, error) {
	certDER, keyDER, err := cp.creds.issueClientCertificate(user, group)
	if err != nil {
		return nil, fmt.Errorf("issuing the client certificate of %s: %w", user, err)
	}
	return &rest.Config{
		Host: cp.APIServerURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   cp.creds.servingCertFile,
			CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}),
			KeyData:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		},
	}, nil
}

// AuditLogPath is the apiserver's audit log: one JSON event per line for
// every get, list and watch of a ConfigMap (see auditPolicy).
func (cp *ControlPlane) AuditLogPath() string { return cp.creds.auditLogFile }

// WriteKubeconfig writes cfg as a kubeconfig file, for a process that
// needs the same identity (a reference kubelet, kubectl). Certificates and
// keys given as files or as data both work.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["nodeagent-local"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["nodeagent"] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientKey:             cfg.KeyFile,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["nodeagent-local"] = &clientcmdapi.Context{Cluster: "nodeagent-local", AuthInfo: "nodeagent"}
	kc.CurrentContext = "nodeagent-local"
	return clientcmd.WriteToFile(*kc, path)
}

// ClientCAFile is the CA of every client certificate the control plane
// issues, the apiserver's own client certificate to kubelets among them:
// a kubelet that serves its API trusts it (--client-ca-file).
func (cp *ControlPlane) ClientCAFile() string { return cp.creds.clientCAFile }
