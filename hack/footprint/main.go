// Command footprint measures what nodeagent's binaries hold in memory
// before they have any work: each is started with `run` against an
// apiserver that refuses every connection (so no pod, no object, no
// cache), and after a few seconds its resident memory is read from
// /proc/<pid>/status, split into the binary's own pages (RssFile) and
// anonymous memory (RssAnon). docs/performance.md quotes the table it
// writes, kept as the record footprint (internal/docruns):
//
//	go run ./hack/footprint -o _output/tables/footprint.json _output/bin/nodeagent _output/bin/nodeagent-agent
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/procstat"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// deadKubeconfig points at a port nothing listens on.
const deadKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: nobody
  user: {token: none}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
`

func main() {
	out := flag.String("o", "_output/tables/footprint.json", "the table to write")
	settle := flag.Duration("settle", 5*time.Second, "how long each binary runs before its memory is read")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: footprint [-o FILE] BINARY...")
		os.Exit(2)
	}
	table := report.Table{Header: []string{"binary", "size", "resident", "the binary's pages", "anonymous"}}
	for _, bin := range flag.Args() {
		row, err := measure(bin, *settle)
		if err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(row, "  "))
		table.Rows = append(table.Rows, row)
	}
	err := os.MkdirAll(filepath.Dir(*out), 0o755)
	if err == nil {
		err = report.WriteJSON(*out, table)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

// measure starts bin, lets it settle and reads its memory.
func measure(bin string, settle time.Duration) ([]string, error) {
	info, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "footprint-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(deadKubeconfig), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--node-name", "footprint",
		"--root-dir", filepath.Join(dir, "root"), "--http-address", "127.0.0.1:0")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	time.Sleep(settle)
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	rss := procstat.KB(status, "VmRSS:")
	if rss == 0 {
		return nil, fmt.Errorf("%s exited before it settled", bin)
	}
	mib := func(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
	return []string{"`" + filepath.Base(bin) + "`", fmt.Sprintf("%.1f MiB", float64(info.Size())/(1<<20)),
		mib(rss), mib(procstat.KB(status, "RssFile:")), mib(procstat.KB(status, "RssAnon:"))}, nil
}
