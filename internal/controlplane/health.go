package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
)

// checkEtcdHealth asks etcd's /health endpoint whether it serves requests.
func checkEtcdHealth(ctx context.Context, etcdURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, etcdURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		return fmt.Errorf("decoding /health: %w", err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd unhealthy: %s", health.Reason)
	}
	return nil
}

// checkAPIServerReady asks the apiserver's /readyz. The apiserver writes its
// serving certificate at start-up, so until that file exists it cannot be
// ready from the client's point of view.
func checkAPIServerReady(ctx context.Context, cfg *rest.Config) error {
	if _, err := os.Stat(cfg.CAFile); err != nil {
		return fmt.Errorf("serving certificate not written yet: %w", err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	return checkEndpoint(ctx, client, cfg.Host, "/readyz")
}

// checkEndpoint GETs url+path with client and wants 200, else an error
// with the status and the start of the body.
func checkEndpoint(ctx context.Context, client *http.Client, url, path string) error {
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s returned %d: %s", path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// BinDirEnv names an environment variable that overrides where the
// control-plane binaries are looked for.
const BinDirEnv = "NODEAGENT_CONTROLPLANE_BIN"

// FindBinDir locates the directory holding etcd and kube-apiserver: $BinDirEnv
// if set; else the directory of the running executable if it holds them (a
// nodeagent built by `make build` sits beside them in _output/bin); else
// _output/bin of the nodeagent checkout that contains the working directory
// (tests run in a package directory of the checkout).
func FindBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if checkExecutable(filepath.Join(dir, "kube-apiserver")) == nil {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "hack", "controlplane", "go.mod")); err == nil {
			return filepath.Join(dir, "_output", "bin"), nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", errors.New("cannot find the control plane binaries: run `make controlplane` in the nodeagent checkout, " +
		"or set " + BinDirEnv + " to a directory holding etcd and kube-apiserver")
}
