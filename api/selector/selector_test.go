package selector

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/meta"
)

func TestParseLabels(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "front", "env": "prod"}
	tests := []struct {
		sel   string
		match bool
		str   string
	}{
		{"", true, ""},
		{"app=web", true, "app=web"},
		{"app==web", true, "app=web"},
		{"app=web,tier!=db", true, "app=web,tier!=db"},
		{"app=web, tier=db", false, "app=web,tier=db"},
		{"env in (prod, staging)", true, "env in (prod,staging)"},
		{"env notin (prod)", false, "env notin (prod)"},
		{"canary", false, "canary"},
		{"!canary", true, "!canary"},
		{"app", true, "app"},
		{"example.com/role!=x", true, "example.com/role!=x"},
	}
	for _, tt := range tests {
		t.Run(tt.sel, func(t *testing.T) {
			s, err := ParseLabels(tt.sel)
			if err != nil {
				t.Fatalf("ParseLabels: %v", err)
			}
			if got := s.Matches(web); got != tt.match {
				t.Errorf("Matches = %v, want %v", got, tt.match)
			}
			if got := s.String(); got != tt.str {
				t.Errorf("String = %q, want %q", got, tt.str)
			}
			again, err := ParseLabels(s.String())
			if err != nil || again.String() != s.String() {
				t.Errorf("String() does not parse back: %q (%v)", again.String(), err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"=web", "app in web", "app in (a", "app=web,,", "app!web", "Bad Key=x", "app=-x-", "x>3", "app=web tier=db",
		"x notin ()", "x in ()", "x in ( )"} { // an empty set (issue #10: notin () matched every pod)
		if _, err := ParseLabels(in); err == nil {
			t.Errorf("ParseLabels(%q) succeeded, want error", in)
		}
	}
	if _, err := ParseFields("status.phase in (Running)"); err == nil {
		t.Errorf("ParseFields accepted a set operator")
	}
}

func TestParseFields(t *testing.T) {
	s, err := ParseFields("spec.nodeName=node-1,status.phase!=Failed")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Matches(map[string]string{"spec.nodeName": "node-1", "status.phase": "Running"}) {
		t.Error("want match")
	}
	if s.Matches(map[string]string{"spec.nodeName": "node-2", "status.phase": "Running"}) {
		t.Error("want no match")
	}
	if v, ok := s.RequiresExactMatch("spec.nodeName"); !ok || v != "node-1" {
		t.Errorf("RequiresExactMatch = %q, %v", v, ok)
	}
}

func TestFromLabelSelector(t *testing.T) {
	ls := &meta.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []meta.LabelSelectorRequirement{
			{Key: "tier", Operator: meta.LabelSelectorOpIn, Values: []string{"front", "edge"}},
			{Key: "canary", Operator: meta.LabelSelectorOpDoesNotExist},
		},
	}
	s, err := FromLabelSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Matches(map[string]string{"app": "web", "tier": "edge"}) {
		t.Error("want match")
	}
	if s.Matches(map[string]string{"app": "web", "tier": "edge", "canary": "1"}) {
		t.Error("canary should not match")
	}
	if n, _ := FromLabelSelector(nil); n.Matches(map[string]string{}) {
		t.Error("nil selector must match nothing")
	}
	if e, _ := FromLabelSelector(&meta.LabelSelector{}); !e.Matches(map[string]string{"x": "y"}) {
		t.Error("empty selector must match everything")
	}
	bad := &meta.LabelSelector{MatchExpressions: []meta.LabelSelectorRequirement{{Key: "a", Operator: "Like"}}}
	if _, err := FromLabelSelector(bad); err == nil {
		t.Error("want error for unknown operator")
	}
}

// A selector typed on the command line becomes the structured form with
// the same meaning, as kubectl's ParseToLabelSelector.
func TestToLabelSelector(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // the structured form, as JSON
		sets map[string]bool
	}{
		{"app=web", `{"matchLabels":{"app":"web"}}`, map[string]bool{"app=web": true, "app=db": false, "": false}},
		{"app==web,tier in (front,edge)", `{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["edge","front"]}]}`,
			map[string]bool{"app=web,tier=edge": true, "app=web": false, "app=web,tier=db": false}},
		{"app!=web", `{"matchExpressions":[{"key":"app","operator":"NotIn","values":["web"]}]}`, map[string]bool{"app=db": true, "": true, "app=web": false}},
		{"tier notin (db),canary,!legacy", `{"matchExpressions":[{"key":"tier","operator":"NotIn","values":["db"]},{"key":"canary","operator":"Exists"},{"key":"legacy","operator":"DoesNotExist"}]}`,
			map[string]bool{"canary=1": true, "canary=1,tier=db": false, "canary=1,legacy=1": false, "tier=web": false}},
		{"a=1,a=2", `{"matchLabels":{"a":"1"},"matchExpressions":[{"key":"a","operator":"In","values":["2"]}]}`, map[string]bool{"a=1": false, "a=2": false}},
	} {
		s, err := ParseLabels(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		ls := ToLabelSelector(s)
		if b, _ := json.Marshal(ls); string(b) != c.want {
			t.Errorf("%q: %s, want %s", c.in, b, c.want)
		}
		back, err := FromLabelSelector(ls)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		for set, want := range c.sets {
			labels := map[string]string{}
			for _, kv := range strings.Split(set, ",") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					labels[k] = v
				}
			}
			if got := back.Matches(labels); got != want || s.Matches(labels) != want {
				t.Errorf("%q on {%s}: structured form %v, parsed %v; want %v", c.in, set, got, s.Matches(labels), want)
			}
		}
	}
}
