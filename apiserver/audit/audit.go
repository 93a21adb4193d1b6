// Package audit is the API server's audit log (kube-apiserver's
// --audit-policy-file and --audit-log-path): every request the policy
// does not exclude becomes one JSON line in the shape of audit.k8s.io/v1
// Event — who (user, source address, user agent), what (verb, resource,
// namespace, name), when, the answer's code — with the request and the
// response objects at the levels Request and RequestResponse.
//
// The policy is Kubernetes' file: rules matched in order, the first that
// matches a request decides its level (None, Metadata, Request,
// RequestResponse), by verbs, resources (with groups), namespaces and
// users. Kobune holds one rule above any policy: Secrets are never logged
// above Metadata, so no Secret's data ever reaches the log.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/yaml"
)

// Levels.
const (
	LevelNone            = "None"
	LevelMetadata        = "Metadata"
	LevelRequest         = "Request"
	LevelRequestResponse = "RequestResponse"
)

var levels = []string{LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse}

// Policy is an audit.k8s.io/v1 Policy file.
type Policy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Rules      []Rule `json:"rules"`
	// OmitStages: Kobune writes one event per request, at
	// ResponseComplete (ResponseStarted for watches and streams);
	// omitting that stage omits the event.
	OmitStages []string `json:"omitStages,omitempty"`
}

// Rule is one policy rule; empty lists match everything.
type Rule struct {
	Level      string          `json:"level"`
	Users      []string        `json:"users,omitempty"`
	UserGroups []string        `json:"userGroups,omitempty"`
	Verbs      []string        `json:"verbs,omitempty"`
	Resources  []GroupResource `json:"resources,omitempty"`
	Namespaces []string        `json:"namespaces,omitempty"`
	OmitStages []string        `json:"omitStages,omitempty"`
}

// GroupResource names resources of an API group ("" is the core group).
type GroupResource struct {
	Group         string   `json:"group"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// LoadPolicy reads and checks a policy file; errors name the rule and
// field.
func LoadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	var p Policy
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	if p.Kind != "Policy" || p.APIVersion != "audit.k8s.io/v1" {
		return nil, fmt.Errorf("audit policy %s: want apiVersion audit.k8s.io/v1, kind Policy (got %q, %q)", path, p.APIVersion, p.Kind)
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("audit policy %s: rules: at least one rule is required", path)
	}
	for i, r := range p.Rules {
		if !slices.Contains(levels, r.Level) {
			return nil, fmt.Errorf("audit policy %s: rules[%d].level: Unsupported value %q: supported values: %s", path, i, r.Level, strings.Join(levels, ", "))
		}
	}
	return &p, nil
}

// Request is what one API request was.
type Request struct {
	Verb        string
	Group       string // "" for the core group
	Version     string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Path is a non-resource request's path, such as /version.
	Path   string
	User   string
	Groups []string
	// ImpersonatedUser and ImpersonatedGroups: who User acted as (--as).
	ImpersonatedUser   string
	ImpersonatedGroups []string
	SourceIP           string
	UserAgent          string
	// RequestObject and ResponseObject are JSON (nil when there is none).
	RequestObject, ResponseObject []byte
	Code                          int
	Message                       string
	Received                      time.Time
	Annotations                   map[string]string
	// Streaming: a watch, log or exec stream, logged when it starts.
	Streaming bool
}

// LevelFor is the level the policy gives a request.
func (p *Policy) LevelFor(r *Request) string {
	level := LevelNone
	for _, rule := range p.Rules {
		if rule.matches(r) {
			if slices.Contains(rule.OmitStages, "ResponseComplete") {
				return LevelNone
			}
			level = rule.Level
			break
		}
	}
	if slices.Contains(p.OmitStages, "ResponseComplete") {
		return LevelNone
	}
	if r.Resource == "secrets" && (level == LevelRequest || level == LevelRequestResponse) {
		level = LevelMetadata // never a Secret's data in the log
	}
	return level
}

func (rule *Rule) matches(r *Request) bool {
	if len(rule.Users) > 0 && !slices.Contains(rule.Users, r.User) {
		return false
	}
	if len(rule.UserGroups) > 0 {
		found := false
		for _, g := range r.Groups {
			found = found || slices.Contains(rule.UserGroups, g)
		}
		if !found {
			return false
		}
	}
	if len(rule.Verbs) > 0 && !slices.Contains(rule.Verbs, r.Verb) {
		return false
	}
	if len(rule.Namespaces) > 0 && !slices.Contains(rule.Namespaces, r.Namespace) {
		return false
	}
	if len(rule.Resources) == 0 {
		return true
	}
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	for _, gr := range rule.Resources {
		if gr.Group != r.Group {
			continue
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, r.Name) {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		for _, want := range gr.Resources {
			if want == res || want == "*" || (want == r.Resource+"/*" && r.Subresource != "") || (want == "*/"+r.Subresource && r.Subresource != "") {
				return true
			}
		}
	}
	return false
}

// Event is an audit.k8s.io/v1 Event.
type Event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     UserInfo          `json:"user"`
	ImpersonatedUser         *UserInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference  `json:"objectRef,omitempty"`
	ResponseStatus           *Status           `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// UserInfo is who made the request.
type UserInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// ObjectReference is what the request was about.
type ObjectReference struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Status is the answer's code.
type Status struct {
	Metadata struct{} `json:"metadata"`
	Status   string   `json:"status,omitempty"`
	Message  string   `json:"message,omitempty"`
	Code     int      `json:"code"`
}

// Log writes events, one JSON line each, to a file it rotates at MaxBytes
// (the old file becomes <path>.1), or to a writer.
type Log struct {
	Policy   *Policy
	MaxBytes int64

	mu   sync.Mutex
	path string
	f    *os.File
	w    *bufio.Writer
	size int64
	out  io.Writer // set for "-" (standard output)
}

// Open opens the log at path ("-": standard output).
func Open(path string, policy *Policy, maxBytes int64) (*Log, error) {
	l := &Log{Policy: policy, MaxBytes: maxBytes, path: path}
	if path == "-" {
		l.out = os.Stdout
		return l, nil
	}
	return l, l.open()
}

func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	fi, _ := f.Stat()
	l.f, l.w, l.size = f, bufio.NewWriter(f), fi.Size()
	return nil
}

// Record writes the event of a request, if the policy logs it.
func (l *Log) Record(r *Request) {
	level := l.Policy.LevelFor(r)
	if level == LevelNone {
		return
	}
	now := time.Now().UTC()
	ev := Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: level, AuditID: uuid.NewString(), Stage: "ResponseComplete",
		RequestURI: requestURI(r), Verb: r.Verb, User: UserInfo{Username: r.User, Groups: r.Groups}, UserAgent: r.UserAgent,
		RequestReceivedTimestamp: r.Received.UTC().Format(time.RFC3339Nano), StageTimestamp: now.Format(time.RFC3339Nano),
		ResponseStatus: &Status{Code: r.Code, Message: r.Message}, Annotations: r.Annotations}
	if r.SourceIP != "" {
		ev.SourceIPs = []string{r.SourceIP}
	}
	if r.ImpersonatedUser != "" {
		ev.ImpersonatedUser = &UserInfo{Username: r.ImpersonatedUser, Groups: r.ImpersonatedGroups}
	}
	if r.Streaming {
		ev.Stage = "ResponseStarted" // a stream is logged when it starts
	}
	if r.Code >= 400 {
		ev.ResponseStatus.Status = "Failure"
	}
	if r.Resource != "" {
		ev.ObjectRef = &ObjectReference{Resource: r.Resource, Namespace: r.Namespace, Name: r.Name, APIGroup: r.Group, APIVersion: r.Version, Subresource: r.Subresource}
	}
	if level == LevelRequest || level == LevelRequestResponse {
		ev.RequestObject = r.RequestObject
	}
	if level == LevelRequestResponse {
		ev.ResponseObject = r.ResponseObject
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.out != nil {
		_, _ = l.out.Write(b)
		return
	}
	if l.MaxBytes > 0 && l.size+int64(len(b)) > l.MaxBytes && l.size > 0 {
		l.rotate()
	}
	n, _ := l.w.Write(b)
	l.size += int64(n)
	_ = l.w.Flush()
}

// rotate moves the full log to <path>.1 and starts a new one.
func (l *Log) rotate() {
	if l.f == nil {
		return // the last reopen failed: events are dropped, not the server
	}
	_ = l.w.Flush()
	_ = l.f.Close()
	_ = os.Rename(l.path, l.path+".1")
	if err := l.open(); err != nil {
		l.f, l.w, l.size = nil, bufio.NewWriter(io.Discard), 0
	}
}

// Close flushes and closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	_ = l.w.Flush()
	return l.f.Close()
}

// requestURI is the request as Kubernetes' REST path would have it.
func requestURI(r *Request) string {
	if r.Resource == "" {
		return r.Path
	}
	base := "/api/" + r.Version
	if r.Group != "" {
		base = "/apis/" + r.Group + "/" + r.Version
	}
	if r.Namespace != "" && r.Resource != "namespaces" {
		base += "/namespaces/" + r.Namespace
	}
	base += "/" + r.Resource
	if r.Name != "" {
		base += "/" + r.Name
	}
	if r.Subresource != "" {
		base += "/" + r.Subresource
	}
	if r.Verb == "watch" {
		base += "?watch=true"
	}
	return base
}
