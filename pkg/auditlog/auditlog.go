// Package auditlog reads a kube-apiserver audit log of ConfigMap (and,
// with TallyResources, Secret) reads and counts them per client, so that
// every request can be attributed to the node that sent it and classed as
// the read it is for etcd.
//
// Contract:
//   - The log is the apiserver's JSON format, one event per line, written
//     with a policy that records configmaps get, list and watch at
//     Metadata level without the RequestReceived stage (the local control
//     plane's, internal/controlplane). Other events are ignored.
//   - A get or list is counted once, at its ResponseComplete event. A
//     watch is counted when it opens (ResponseStarted), or at its
//     ResponseComplete when it was refused before it opened.
//   - A get or list without a resourceVersion is a quorum read, which the
//     apiserver sends to etcd. With one ("0" or any other) the apiserver
//     serves it from its watch cache.
//   - A request is the user's the apiserver authorized it as: the
//     impersonated user where the client impersonated one.
//   - Requests are placed in time by when the apiserver received them, and
//     Count takes those in [from, to).
package auditlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// Counts are one client's ConfigMap requests.
type Counts struct {
	// QuorumGets reach etcd; CacheGets are served by the apiserver's
	// watch cache.
	QuorumGets, CacheGets int
	// QuorumLists and CacheLists are lists, by the same rule.
	QuorumLists, CacheLists int
	// Watches counts watches opened.
	Watches int
	// OpenWatches is the watches opened less those that ended: the
	// watches open at the end, where the log holds their opening.
	OpenWatches int
	// Errors counts requests the apiserver answered with a status of 400
	// or more (404 for a missing ConfigMap included).
	Errors int
}

// Gets is every get, quorum or not.
func (c Counts) Gets() int { return c.QuorumGets + c.CacheGets }

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.QuorumGets += o.QuorumGets
	c.CacheGets += o.CacheGets
	c.QuorumLists += o.QuorumLists
	c.CacheLists += o.CacheLists
	c.Watches += o.Watches
	c.OpenWatches += o.OpenWatches
	c.Errors += o.Errors
}

// event is the part of an audit.k8s.io/v1 Event that counting needs.
type event struct {
	Stage      string    `json:"stage"`
	Verb       string    `json:"verb"`
	RequestURI string    `json:"requestURI"`
	User       auditUser `json:"user"`
	// ImpersonatedUser is set when the client acted as another user
	// (Impersonate-User): the apiserver authorized the request as that
	// user, so the request is counted as theirs.
	ImpersonatedUser *auditUser `json:"impersonatedUser"`
	ObjectRef        *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	// StageTimestamp is when the event's stage was reached: when a
	// watch ended, for its ResponseComplete.
	StageTimestamp time.Time `json:"stageTimestamp"`
}

type auditUser struct {
	Username string `json:"username"`
}

// user is the user the apiserver authorized e's request as.
func (e *event) user() string {
	if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username != "" {
		return e.ImpersonatedUser.Username
	}
	return e.User.Username
}

// Window is a span of time [From, To); a zero To means no end.
type Window struct{ From, To time.Time }

func (w Window) holds(t time.Time) bool {
	return !t.Before(w.From) && (w.To.IsZero() || t.Before(w.To))
}

// Count reads the audit log at path and counts the ConfigMap requests
// received in [from, to), per user name. A zero to means no end.
func Count(path string, from, to time.Time) (map[string]Counts, error) {
	counts, err := CountWindows(path, Window{From: from, To: to})
	if err != nil {
		return nil, err
	}
	return counts[0], nil
}

// CountWindows reads the audit log at path once and counts, for each
// window, the ConfigMap requests received in it, per user name.
func CountWindows(path string, windows ...Window) ([]map[string]Counts, error) {
	counts := make([]map[string]Counts, len(windows))
	for i := range counts {
		counts[i] = map[string]Counts{}
	}
	err := eachConfigMapEvent(path, func(e event) {
		for i, w := range windows {
			if !w.holds(e.RequestReceivedTimestamp) {
				continue
			}
			c := counts[i][e.user()]
			if c.add(e) {
				counts[i][e.user()] = c
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// eachConfigMapEvent calls f with every ConfigMap event of the audit log
// at path, in the log's order.
func eachConfigMapEvent(path string, f func(event)) error {
	return eachEvent(path, map[string]bool{"configmaps": true}, f)
}

// eachEvent calls f with every event of the audit log at path about one
// of resources, in the log's order, rotated backups first (logFiles).
func eachEvent(path string, resources map[string]bool, f func(event)) error {
	files, err := logFiles(path)
	if err != nil {
		return err
	}
	for _, name := range files {
		if err := eachEventIn(name, resources, f); err != nil {
			return err
		}
	}
	return nil
}

// eachEventIn is eachEvent for one file.
func eachEventIn(path string, resources map[string]bool, f func(event)) error {
	file, err := openLogFile(path)
	if err != nil {
		return err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		var e event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			continue // the apiserver may be writing the last line right now
		}
		if e.ObjectRef != nil && resources[e.ObjectRef.Resource] {
			f(e)
		}
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading the apiserver's audit log %s: %w", path, err)
	}
	return nil
}

// Tally is an audit log's requests for some resources, per resource and
// user, and the span of time they were received in: the window asked for,
// or where it is open, the first and last request in it.
type Tally struct {
	// From and To are the first and the last request received.
	From, To time.Time
	// Counts maps a resource ("configmaps", "secrets") to its counts per
	// user.
	Counts map[string]map[string]Counts
}

// Seconds is the span of the tally, in seconds.
func (t Tally) Seconds() float64 { return t.To.Sub(t.From).Seconds() }

// TallyResources reads the audit log at path and counts the requests for
// each of resources received in window, per user, by the rules of Count.
// OpenWatches alone looks at the whole log up to the window's end: the
// watches open at its end, wherever in the log they opened.
func TallyResources(path string, window Window, resources ...string) (Tally, error) {
	return tally(path, window, "", resources)
}

// TallyNamespace is TallyResources for the requests of one namespace.
func TallyNamespace(path string, window Window, namespace string, resources ...string) (Tally, error) {
	return tally(path, window, namespace, resources)
}

// tally is TallyResources for namespace's requests, or every namespace's
// where it is empty.
func tally(path string, window Window, namespace string, resources []string) (Tally, error) {
	t := Tally{Counts: map[string]map[string]Counts{}}
	want := map[string]bool{}
	for _, r := range resources {
		want[r] = true
		t.Counts[r] = map[string]Counts{}
	}
	err := eachEvent(path, want, func(e event) {
		at, happened := e.RequestReceivedTimestamp, e.RequestReceivedTimestamp
		if e.Verb == "watch" && e.Stage == "ResponseComplete" && !e.StageTimestamp.IsZero() {
			happened = e.StageTimestamp // a watch ends long after it was received
		}
		if !window.To.IsZero() && !happened.Before(window.To) || namespace != "" && e.ObjectRef.Namespace != namespace {
			return
		}
		byUser := t.Counts[e.ObjectRef.Resource]
		c := byUser[e.user()]
		var seen Counts
		if !seen.add(e) {
			return
		}
		if !window.holds(at) {
			// Before the window: only whether a watch opened or ended.
			c.OpenWatches += seen.OpenWatches
			byUser[e.user()] = c
			return
		}
		c.Add(seen)
		byUser[e.user()] = c
		if t.From.IsZero() || at.Before(t.From) {
			t.From = at
		}
		if at.After(t.To) {
			t.To = at
		}
	})
	if !window.From.IsZero() && !window.To.IsZero() {
		t.From, t.To = window.From, window.To
	}
	return t, err
}

// Get is one ConfigMap GET the apiserver answered.
type Get struct {
	User            string
	Namespace, Name string
	Received        time.Time
	// Quorum: sent without a resourceVersion, so read from etcd.
	Quorum bool
	Code   int
}

// Gets reads the audit log at path and returns the ConfigMap GETs received
// in [from, to), in the log's order (which is nearly, not exactly, the
// order received). A zero to means no end.
func Gets(path string, from, to time.Time) ([]Get, error) {
	window := Window{From: from, To: to}
	var gets []Get
	err := eachConfigMapEvent(path, func(e event) {
		if e.Verb != "get" || e.Stage != "ResponseComplete" || !window.holds(e.RequestReceivedTimestamp) {
			return
		}
		g := Get{User: e.user(), Namespace: e.ObjectRef.Namespace, Name: e.ObjectRef.Name,
			Received: e.RequestReceivedTimestamp, Quorum: quorum(e.RequestURI)}
		if e.ResponseStatus != nil {
			g.Code = e.ResponseStatus.Code
		}
		gets = append(gets, g)
	})
	if err != nil {
		return nil, err
	}
	return gets, nil
}

// add counts e if it is the event that stands for its request, and says
// whether it was.
func (c *Counts) add(e event) bool {
	code := 0
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	failed := code >= 400
	switch {
	case e.Verb == "watch" && e.Stage == "ResponseStarted" && failed:
		// A watch refused (the node authorizer has not yet seen the pod
		// that references the object) is logged with a ResponseStarted
		// stage too; it never opened, and its ResponseComplete counts it.
		return false
	case e.Verb == "watch" && e.Stage == "ResponseStarted":
		c.Watches++
		c.OpenWatches++
	case e.Verb == "watch" && e.Stage == "ResponseComplete" && failed:
		c.Watches++
	case e.Verb == "watch" && e.Stage == "ResponseComplete":
		// A watch that opened has ended: counted when it opened.
		c.OpenWatches--
		return true
	case e.Stage != "ResponseComplete":
		return false
	case e.Verb == "get" && quorum(e.RequestURI):
		c.QuorumGets++
	case e.Verb == "get":
		c.CacheGets++
	case e.Verb == "list" && quorum(e.RequestURI):
		c.QuorumLists++
	case e.Verb == "list":
		c.CacheLists++
	default:
		return false
	}
	if failed {
		c.Errors++
	}
	return true
}

// quorum says whether a read asks for no resourceVersion, which makes the
// apiserver read from etcd.
func quorum(requestURI string) bool {
	u, err := url.Parse(requestURI)
	if err != nil {
		return true
	}
	return u.Query().Get("resourceVersion") == ""
}
