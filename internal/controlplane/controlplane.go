// Package controlplane runs a real etcd and kube-apiserver on loopback, for
// nodeagent's tests and for `nodeagent compare` when no cluster is given,
// and on request the chosen controllers of kube-controller-manager.
//
// Contract:
//   - Start picks free 127.0.0.1 ports, writes credentials (a client CA, an
//     admin client certificate in system:masters, service-account keys) and
//     a kubeconfig into a fresh directory, starts etcd and then the
//     apiserver (Node and RBAC authorization, its own self-signed serving
//     certificate, the default admission plugins with ServiceAccount, an
//     audit log of ConfigMap reads), then
//     kube-controller-manager with the serviceaccount and
//     root-ca-cert-publisher controllers plus Options.Controllers, and
//     returns only once the apiserver's /readyz and the controller manager's
//     /healthz answer ok and the default namespace has its ServiceAccount,
//     or fails with the tail of the logs. Pods created in a new namespace
//     are refused until its ServiceAccount exists: WaitForServiceAccount.
//   - NodeRESTConfig issues a kubelet's identity for a node, so that each
//     simulated node's requests are authorized and audited as that node's.
//   - RestartEtcd and RestartAPIServer stop one process and start it again
//     with the same data directory and ports, waiting for readiness again.
//   - Stop terminates both processes (SIGTERM, then SIGKILL) and removes the
//     directory; it is safe to call more than once. If the calling process
//     dies without calling Stop, the kernel kills both children
//     (PR_SET_PDEATHSIG), so nothing is left running.
//   - A temporary directory left by a process that was killed (SIGKILL gives
//     no chance to clean up) is removed by the next Start.
//   - The binaries come from Options.BinDir, built by `make controlplane`;
//     a missing binary is an error that says so.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// Versions the binaries are built at; hack/controlplane/go.mod pins them.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "3.7.0"
)

// Options configure Start. The zero value is usable.
type Options struct {
	// BinDir holds the etcd and kube-apiserver binaries. Empty: see
	// FindBinDir.
	BinDir string
	// Dir is where data, credentials, logs and the kubeconfig go. Empty:
	// a new temporary directory that Stop removes. A given Dir is kept.
	Dir string
	// StartTimeout bounds each wait for readiness. Default 90 s, enough
	// for a cold start on a loaded two-core machine.
	StartTimeout time.Duration
	// ExtraAPIServerArgs are appended to the apiserver's flags (a later
	// flag wins), for tests that need a feature switched.
	ExtraAPIServerArgs []string
	// Controllers names kube-controller-manager controllers to run besides
	// ServiceAccountControllers, e.g. "daemonset". Most tests want no one
	// else writing to the apiserver, and add none.
	Controllers []string
	// APIServer, when set, is the kube-apiserver binary to run in place
	// of BinDir's: an older release, whose metrics a reader must also
	// understand (make etcd-metrics-fixture).
	APIServer string
	// APIServerOnly starts etcd and the apiserver alone: no controller
	// manager (BinDir's would be newer than an older APIServer), so no
	// ServiceAccount, and pods cannot be created.
	APIServerOnly bool
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Dir holds everything the control plane writes.
	Dir string
	// KubeconfigPath is an admin kubeconfig for the apiserver.
	KubeconfigPath string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string
	// EtcdURL is etcd's client URL, http://127.0.0.1:<port>.
	EtcdURL string
	// StartupDuration is how long Start took, from first process start to
	// the apiserver's readiness.
	StartupDuration time.Duration

	creds                *credentials
	etcd                 *process
	apiserver            *process
	controllerManager    *process
	controllerManagerURL string
	timeout              time.Duration
	removeDir            bool
	restConfig           *rest.Config
	stopOnce             sync.Once
}

// Start starts etcd and kube-apiserver and waits until the apiserver is
// ready. The caller must call Stop.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	for _, bin := range binaries(binDir, opts) {
		if err := checkExecutable(bin); err != nil {
			return nil, fmt.Errorf("control plane binary %s: %w; run `make controlplane` to build the control plane into %s", bin, err, binDir)
		}
	}
	cp := &ControlPlane{Dir: opts.Dir, timeout: opts.StartTimeout}
	if cp.timeout <= 0 {
		cp.timeout = 90 * time.Second
	}
	if err := cp.makeDir(); err != nil {
		cp.Stop()
		return nil, err
	}
	if err := cp.configure(binDir, opts); err != nil {
		cp.Stop()
		return nil, err
	}
	begin := time.Now()
	steps := []func(context.Context) error{cp.startEtcd, cp.startAPIServer, cp.startControllerManager, cp.waitForDefaultServiceAccount}
	if opts.APIServerOnly {
		steps = steps[:2]
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	cp.StartupDuration = time.Since(begin)
	return cp, nil
}

// binaries are the paths of the programs Start runs for opts.
func binaries(binDir string, opts Options) []string {
	apiserver := opts.APIServer
	if apiserver == "" {
		apiserver = filepath.Join(binDir, "kube-apiserver")
	}
	out := []string{filepath.Join(binDir, "etcd"), apiserver}
	if !opts.APIServerOnly {
		out = append(out, filepath.Join(binDir, "kube-controller-manager"))
	}
	return out
}

// makeDir makes cp.Dir, a temporary directory owned by this process when
// none was given (Stop removes it, and a later Start removes those whose
// owner died).
func (cp *ControlPlane) makeDir() error {
	if cp.Dir != "" {
		return os.MkdirAll(cp.Dir, 0o700)
	}
	removeAbandonedDirs()
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		return err
	}
	cp.Dir, cp.removeDir = dir, true
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// configure picks free ports, writes the credentials and the admin
// kubeconfig, and sets up the three processes, which it does not start.
func (cp *ControlPlane) configure(binDir string, opts Options) error {
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	if cp.creds, err = writeCredentials(cp.Dir); err != nil {
		return fmt.Errorf("writing control plane credentials: %w", err)
	}
	etcdClientPort, etcdPeerPort, apiserverPort, controllerManagerPort := ports[0], ports[1], ports[2], ports[3]
	cp.EtcdURL = "http://127.0.0.1:" + strconv.Itoa(etcdClientPort)
	cp.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(apiserverPort)
	cp.etcd = &process{
		name:    "etcd",
		path:    filepath.Join(binDir, "etcd"),
		args:    etcdArgs(cp.Dir, cp.EtcdURL, "http://127.0.0.1:"+strconv.Itoa(etcdPeerPort)),
		logPath: filepath.Join(cp.Dir, "etcd.log"),
	}
	cp.apiserver = &process{
		name:    "kube-apiserver",
		path:    binaries(binDir, opts)[1],
		args:    append(apiserverArgs(cp.creds, cp.EtcdURL, apiserverPort), opts.ExtraAPIServerArgs...),
		logPath: filepath.Join(cp.Dir, "kube-apiserver.log"),
	}
	cp.KubeconfigPath = filepath.Join(cp.Dir, "kubeconfig")
	cp.restConfig = &rest.Config{
		Host: cp.APIServerURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   cp.creds.servingCertFile,
			CertFile: cp.creds.adminCertFile,
			KeyFile:  cp.creds.adminKeyFile,
		},
	}
	if err := WriteKubeconfig(cp.KubeconfigPath, cp.restConfig); err != nil {
		return err
	}
	cp.controllerManagerURL = "https://127.0.0.1:" + strconv.Itoa(controllerManagerPort)
	if opts.APIServerOnly {
		return nil
	}
	controllers := append(append([]string(nil), ServiceAccountControllers...), opts.Controllers...)
	cp.controllerManager = &process{
		name:    "kube-controller-manager",
		path:    filepath.Join(binDir, "kube-controller-manager"),
		args:    controllerManagerArgs(cp.Dir, cp.KubeconfigPath, cp.creds.servingCertFile, controllerManagerPort, controllers),
		logPath: filepath.Join(cp.Dir, "kube-controller-manager.log"),
	}
	return nil
}

// RESTConfig returns a new admin client configuration for the apiserver.
// Callers may change the copy (QPS, user agent) freely.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return rest.CopyConfig(cp.restConfig)
}

// RestartEtcd stops etcd and starts it again on the same port and data.
// The apiserver keeps running and reconnects by itself; RestartEtcd returns
// once etcd is healthy and the apiserver is ready again.
func (cp *ControlPlane) RestartEtcd(ctx context.Context) error {
	cp.etcd.stop(30 * time.Second)
	if err := cp.startEtcd(ctx); err != nil {
		return err
	}
	return cp.waitAPIServerReady(ctx)
}

// RestartAPIServer stops the apiserver and starts it again on the same port.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.apiserver.stop(30 * time.Second)
	return cp.startAPIServer(ctx)
}

// StopAPIServer stops the apiserver only, for tests of an agent facing a
// dead apiserver. StartAPIServer brings it back.
func (cp *ControlPlane) StopAPIServer() { cp.apiserver.stop(30 * time.Second) }

// StartAPIServer starts an apiserver stopped by StopAPIServer.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error { return cp.startAPIServer(ctx) }

// Stop terminates the controller manager, the apiserver, then etcd, and
// removes a temporary Dir.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		if cp.controllerManager != nil {
			cp.controllerManager.stop(15 * time.Second)
		}
		if cp.apiserver != nil {
			cp.apiserver.stop(15 * time.Second)
		}
		if cp.etcd != nil {
			cp.etcd.stop(15 * time.Second)
		}
		if cp.removeDir {
			_ = os.RemoveAll(cp.Dir)
		}
	})
}

// Logs returns the last n lines of each process's log, for test failures.
func (cp *ControlPlane) Logs(n int) string {
	logs := fmt.Sprintf("--- etcd.log (last %d lines)\n%s\n--- kube-apiserver.log (last %d lines)\n%s",
		n, cp.etcd.tail(n), n, cp.apiserver.tail(n))
	if cp.controllerManager != nil {
		logs += fmt.Sprintf("\n--- kube-controller-manager.log (last %d lines)\n%s", n, cp.controllerManager.tail(n))
	}
	return logs
}

func (cp *ControlPlane) startEtcd(ctx context.Context) error {
	if err := cp.etcd.start(); err != nil {
		return err
	}
	err := waitFor(ctx, cp.timeout, cp.etcd, func(ctx context.Context) error {
		return checkEtcdHealth(ctx, cp.EtcdURL)
	})
	if err != nil {
		return fmt.Errorf("etcd did not become healthy: %w\n%s", err, cp.Logs(30))
	}
	return nil
}

func (cp *ControlPlane) startAPIServer(ctx context.Context) error {
	if err := cp.apiserver.start(); err != nil {
		return err
	}
	return cp.waitAPIServerReady(ctx)
}

func (cp *ControlPlane) waitAPIServerReady(ctx context.Context) error {
	err := waitFor(ctx, cp.timeout, cp.apiserver, func(ctx context.Context) error {
		return checkAPIServerReady(ctx, cp.restConfig)
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w\n%s", err, cp.Logs(30))
	}
	return nil
}

// waitFor polls check until it succeeds, the process exits, the timeout
// passes or ctx ends. It returns the last check error on timeout.
func waitFor(ctx context.Context, timeout time.Duration, p *process, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.exitError(); err != nil {
			return false, err
		}
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		last = check(checkCtx)
		return last == nil, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("%w after %s (last check: %v)", err, timeout, last)
	}
	return err
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("not found")
		}
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment
// ago. All listeners are held open until every port is chosen, so the same
// port is never returned twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

const (
	tempDirPrefix = "nodeagent-controlplane-"
	ownerFile     = "owner.pid"
)

// removeAbandonedDirs deletes temporary control-plane directories whose
// owning process no longer exists.
func removeAbandonedDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(string(data))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, os.ErrNotExist) {
			_ = os.RemoveAll(dir)
		}
	}
}
