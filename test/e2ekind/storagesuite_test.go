//go:build e2e

package e2ekind

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// The tests of Kubernetes' external storage suite that apply to an
// ephemeral-only driver, each of which must pass (docs/csi.md lists them).
var storageSuiteMustPass = []string{
	"should create read-only inline ephemeral volume",
	"should create read/write inline ephemeral volume",
	"should support two pods which have the same volume definition",
	"should support multiple inline ephemeral volumes",
}

// storageSuiteResult is one test of the suite as its JUnit report gives it.
type storageSuiteResult struct {
	Suite, Pattern, Test string
	Result               string // passed, skipped, failed
	Why                  string
}

// csiStorageSuite runs Kubernetes' external storage e2e suite
// (hack/storage-e2e, built from the kind nodes' k8s.io/kubernetes) against
// the installed driver, in its Secrets mode and reading as the pods, with
// hack/storage-e2e/testdriver.yaml, and holds it to every test that applies
// passing. The suite's own registration skips
// (DEBUG_STORAGE_TESTSUITE) say which suites and patterns it never defines
// for the driver, and why; the whole account goes to
// _output/e2e-kind/storage-e2e.json, the record docs/csi.md quotes.
func csiStorageSuite(t *testing.T) {
	binary := os.Getenv("NODEAGENT_STORAGE_E2E")
	if binary == "" {
		t.Fatal("NODEAGENT_STORAGE_E2E is not set: make e2e-kind builds the suite (hack/storage-e2e/build.sh) and sets it")
	}
	grantSuiteReads(t)
	dir := filepath.Join(outputDir, "storage-e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--kubeconfig="+kubeconfigPath,
		"-storage.testdriver="+filepath.Join(repoRoot(t), "hack", "storage-e2e", "testdriver.yaml"),
		"--ginkgo.focus=External.Storage", "--ginkgo.skip=\\[Disruptive\\]|\\[Feature:", "--ginkgo.no-color",
		"--ginkgo.timeout=15m", "--report-dir="+dir)
	cmd.Env = append(os.Environ(), "DEBUG_STORAGE_TESTSUITE=1")
	out, runErr := cmd.CombinedOutput()
	logPath := filepath.Join(dir, "output.log")
	if err := os.WriteFile(logPath, out, 0o644); err != nil {
		t.Error(err)
	}
	results, err := readStorageSuite(filepath.Join(dir, "junit_01.xml"), string(out))
	if err != nil {
		t.Fatalf("the suite's report (its output: %s; exit: %v): %v", logPath, runErr, err)
	}
	passed := map[string]bool{}
	for _, r := range results {
		switch r.Result {
		case "failed":
			t.Errorf("failed: %s [%s] %s: %s (the suite's output: %s)", r.Suite, r.Pattern, r.Test, r.Why, logPath)
		case "passed":
			passed[r.Test] = true
		}
		if r.Result != "not defined" {
			t.Logf("%s: %s [%s] %s %s", r.Result, r.Suite, r.Pattern, r.Test, r.Why)
		}
	}
	for _, name := range storageSuiteMustPass {
		if !passed[name] {
			t.Errorf("%q did not pass (the suite's output: %s)", name, logPath)
		}
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("the suite exited with %v though no test failed (its output: %s)", runErr, logPath)
	}
	writeDocTable(t, "storage-e2e", storageSuiteTable(results))
}

// grantSuiteReads lets every service account read, by name, what
// testdriver.yaml's volumes name, in every namespace: the suite's pods run
// as the default account of namespaces it makes for each test, and the
// driver reads as the pods. Taken back when the test ends.
func grantSuiteReads(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	name := "e2e-kind-storage-suite-reads"
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"kube-root-ca.crt", "storage-e2e-absent"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"storage-e2e-absent"}, Verbs: read}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"}}}
	if _, err := clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// junitSuites is the part of the suite's JUnit report read here.
type junitSuites struct {
	Cases []struct {
		Name    string    `xml:"name,attr"`
		Skipped *junitMsg `xml:"skipped"`
		Failure *junitMsg `xml:"failure"`
	} `xml:"testsuite>testcase"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
}

var (
	// [sig-storage] CSI Volumes [Driver: X] [Testpattern: P] suite test
	externalCase = regexp.MustCompile(`External Storage \[Driver: [^\]]+\] \[Testpattern: ([^\]]+)\] (\S+) (.*?)(?: \[Driver: [^\]]+\])?$`)
	// DebugStorageTestsuite's line for a pattern it does not register.
	notRegistered = regexp.MustCompile(`Skipping registration: \[Testpattern: ([^\]]+)\] (\S+) \[Driver: [^\]]+\] - (.*)`)
)

// readStorageSuite reads the external storage tests of the JUnit report and
// the registration skips of the suite's output.
func readStorageSuite(junitPath, output string) ([]storageSuiteResult, error) {
	data, err := os.ReadFile(junitPath)
	if err != nil {
		return nil, err
	}
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", junitPath, err)
	}
	var results []storageSuiteResult
	for _, c := range suites.Cases {
		m := externalCase.FindStringSubmatch(c.Name)
		if m == nil {
			continue // a test of another package the suite links
		}
		r := storageSuiteResult{Pattern: m[1], Suite: m[2], Test: m[3], Result: "passed"}
		switch {
		case c.Failure != nil:
			r.Result, r.Why = "failed", c.Failure.Message
		case c.Skipped != nil:
			r.Result, r.Why = "skipped", strings.TrimPrefix(c.Skipped.Message, "skipped - ")
		}
		results = append(results, r)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("%s holds no External Storage test", junitPath)
	}
	seen := map[[2]string]bool{} // the suite prints each twice
	for _, m := range notRegistered.FindAllStringSubmatch(output, -1) {
		if seen[[2]string{m[1], m[2]}] {
			continue
		}
		seen[[2]string{m[1], m[2]}] = true
		results = append(results, storageSuiteResult{Pattern: m[1], Suite: m[2], Result: "not defined", Why: strings.TrimSuffix(strings.TrimSpace(m[3]), " - skipping")})
	}
	return results, nil
}

// storageSuiteTable is the docs' account: every test the suite ran for the
// driver, then each suite it defines no test of for the driver, with how
// many of its patterns and the volume types those need (the suite's reason).
func storageSuiteTable(results []storageSuiteResult) report.Table {
	table := report.Table{Header: []string{"suite", "test pattern", "test", "result", "why"}}
	counts := map[string]int{}
	var suites []string
	patterns := map[string]int{}
	reasons := map[string][]string{}
	for _, r := range results {
		counts[r.Result]++
		if r.Result != "not defined" {
			table.Rows = append(table.Rows, []string{r.Suite, r.Pattern, r.Test, r.Result, r.Why})
			continue
		}
		if patterns[r.Suite] == 0 {
			suites = append(suites, r.Suite)
		}
		patterns[r.Suite]++
		why := r.Why
		if m := unsupportedType.FindStringSubmatch(why); m != nil {
			why = m[1]
		}
		if !slices.Contains(reasons[r.Suite], why) {
			reasons[r.Suite] = append(reasons[r.Suite], why)
		}
	}
	sort.Strings(suites)
	for _, suite := range suites {
		sort.Strings(reasons[suite])
		table.Rows = append(table.Rows, []string{suite, plural(patterns[suite], "pattern"), "every test", "not defined",
			"needs " + strings.Join(reasons[suite], " or ") + " volumes"})
	}
	table.Rows = append(table.Rows, []string{"all (Kubernetes " + storageSuiteVersion() + ")", "", fmt.Sprintf("%d run", counts["passed"]+counts["failed"]+counts["skipped"]),
		fmt.Sprintf("%d passed, %d skipped, %d failed", counts["passed"], counts["skipped"], counts["failed"]),
		fmt.Sprintf("%d suite and pattern pairs not defined for an ephemeral-only driver", counts["not defined"])})
	return table
}

// unsupportedType reads the volume type out of the suite's reason for
// not defining a pattern.
var unsupportedType = regexp.MustCompile(`does not support volume type "(\w+)"`)

// storageSuiteVersion is the k8s.io/kubernetes the suite was built from.
func storageSuiteVersion() string {
	data, _ := os.ReadFile(filepath.Join("..", "..", "hack", "storage-e2e", "go.mod"))
	if m := regexp.MustCompile(`k8s.io/kubernetes (v\S+)`).FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// plural is "1 pattern", "2 patterns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
