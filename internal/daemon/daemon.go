// Package daemon is the plumbing every nodeagent command shares, written
// once: the logging flags and their set-up, the signals that end a command,
// the cluster it talks to, and the serving of its HTTP endpoints.
//
// Contract:
//
//   - Logging: -v, --vmodule and --logging-format (text, klog's own, or
//     JSON lines through log/slog, -v honoured in both); the process logs
//     to standard error.
//   - Signals: SIGINT and SIGTERM end the context a command runs in, and
//     nothing else does; a second signal is Go's default (the process
//     exits at once).
//   - Cluster: found as kubectl finds it: --kubeconfig, else $KUBECONFIG,
//     else ~/.kube/config, else the pod's service account.
//   - HTTP: Serve serves until its context ends, then shuts down within
//     ShutdownGrace; a server that fails is the caller's error, never
//     dropped.
package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Logging is a command's logging flags.
type Logging struct {
	format string
	klog   *flag.FlagSet
}

// AddLoggingFlags adds -v, --vmodule and --logging-format to fs; call
// SetUp once fs is parsed.
func AddLoggingFlags(fs *pflag.FlagSet) *Logging {
	l := &Logging{klog: flag.NewFlagSet("klog", flag.ContinueOnError)}
	fs.StringVar(&l.format, "logging-format", "text", "Log format: text or json.")
	klog.InitFlags(l.klog)
	// Of klog's many flags, only verbosity is worth a user's attention;
	// the process always logs to stderr.
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(l.klog.Lookup(name))
	}
	return l
}

// SetUp sends klog's output as the chosen format; the caller defers
// klog.Flush.
func (l *Logging) SetUp() error {
	switch l.format {
	case "text":
		return nil
	case "json":
		verbosity := 0
		if f := l.klog.Lookup("v"); f != nil {
			fmt.Sscan(f.Value.String(), &verbosity)
		}
		handler := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-verbosity)})
		klog.SetLogger(logr.FromSlogHandler(handler))
		return nil
	default:
		return fmt.Errorf("--logging-format: unknown value %q; choose text or json", l.format)
	}
}

// SignalContext is a context that SIGINT or SIGTERM ends.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// RESTConfig is the cluster kubectl would use: kubeconfig (a path, may be
// empty), else $KUBECONFIG, else ~/.kube/config, else the pod's service
// account; kubeContext, where not empty, picks the kubeconfig's context.
func RESTConfig(kubeconfig, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the cluster (--kubeconfig, $KUBECONFIG, ~/.kube/config, or the pod's service account): %w", err)
	}
	return config, nil
}

// ShutdownGrace bounds how long Serve waits for requests in flight once its
// context ends: well inside a pod's default termination grace (30 s).
const ShutdownGrace = 5 * time.Second

// Serve serves server on listener (over TLS when server.TLSConfig is set,
// its certificates from TLSConfig) until ctx ends, then shuts it down
// within ShutdownGrace. It returns the server's error if it stopped
// serving by itself, nil after a shutdown.
func Serve(ctx context.Context, server *http.Server, listener net.Listener) error {
	done := make(chan error, 1)
	go func() {
		if server.TLSConfig != nil {
			done <- server.ServeTLS(listener, "", "")
		} else {
			done <- server.Serve(listener)
		}
	}()
	select {
	case err := <-done:
		return fmt.Errorf("serving on %s: %w", listener.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := server.Shutdown(shutdown); err != nil {
		// Requests still in flight after the grace: cut them.
		_ = server.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", listener.Addr(), err)
	}
	return nil
}
