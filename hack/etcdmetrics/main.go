// Command etcdmetrics records what a real kube-apiserver's /metrics says of
// ConfigMap reads: it starts etcd and the apiserver given (-apiserver; the
// control plane's own by default), scrapes /metrics, sends a known number
// of quorum GETs (no resourceVersion: etcd reads) and of GETs at
// resourceVersion 0 (the watch cache's), scrapes again, and writes the two
// scrapes' etcd_requests_total and apiserver_request_total as
// <out>/<version>-before.txt and -after.txt. pkg/apimetrics's tests read
// them: a reader of etcd_requests_total must find the quorum GETs whichever
// labels the release uses (make etcd-metrics-fixture).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
)

// The GETs sent between the two scrapes; pkg/apimetrics's test expects
// these numbers.
const (
	quorumGets = 5
	cachedGets = 3
)

func main() {
	apiserver := flag.String("apiserver", "", "the kube-apiserver binary (default: the control plane's, _output/bin/kube-apiserver)")
	out := flag.String("o", "pkg/apimetrics/testdata", "the directory the scrapes are written to")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, *apiserver, *out); err != nil {
		fmt.Fprintln(os.Stderr, "etcdmetrics:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, apiserver, out string) error {
	cp, err := controlplane.Start(ctx, controlplane.Options{APIServer: apiserver, APIServerOnly: true})
	if err != nil {
		return err
	}
	defer cp.Stop()
	client, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	cms := client.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "etcdmetrics"}, Data: map[string]string{"k": "v"}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	before, err := scrape(ctx, client)
	if err != nil {
		return err
	}
	for i := range quorumGets + cachedGets {
		opts := metav1.GetOptions{}
		if i >= quorumGets {
			opts.ResourceVersion = "0"
		}
		if _, err := cms.Get(ctx, cm.Name, opts); err != nil {
			return err
		}
	}
	after, err := scrape(ctx, client)
	if err != nil {
		return err
	}
	for name, lines := range map[string][]string{"before": before, "after": after} {
		path := filepath.Join(out, fmt.Sprintf("%s-%s.txt", version.GitVersion, name))
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}

// kept are the families the fixture keeps of a scrape.
var kept = []string{"etcd_requests_total", "apiserver_request_total"}

// scrape reads /metrics and keeps the lines of the kept families: their
// HELP and TYPE lines and their ConfigMap series.
func scrape(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	data, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, family := range kept {
			isFamily := strings.HasPrefix(line, family+"{") || strings.HasPrefix(line, "# HELP "+family+" ") || strings.HasPrefix(line, "# TYPE "+family+" ")
			if isFamily && (strings.HasPrefix(line, "#") || strings.Contains(line, `"configmaps"`)) {
				lines = append(lines, line)
			}
		}
	}
	return lines, sc.Err()
}
