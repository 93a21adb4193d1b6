package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRoutes(t *testing.T) {
	a := &app{hostname: "pod-1"}
	a.ready.Store(true)
	srv := httptest.NewServer(a.routes())
	defer srv.Close()
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("GET", "/"); code != 200 || !strings.Contains(body, "labapp dev on pod-1") {
		t.Errorf("/ = %d %q", code, body)
	}
	if code, _ := get("GET", "/readyz"); code != 200 {
		t.Errorf("/readyz = %d, want 200", code)
	}
	get("POST", "/readyz/off")
	if code, _ := get("GET", "/readyz"); code != 503 {
		t.Errorf("/readyz after off = %d, want 503", code)
	}
	if code, _ := get("GET", "/healthz"); code != 200 {
		t.Errorf("/healthz = %d", code)
	}
	if code, body := get("POST", "/alloc?mb=2"); code != 200 || !strings.Contains(body, "holding 2 MiB") {
		t.Errorf("/alloc = %d %q", code, body)
	}
	if code, _ := get("POST", "/exit?code=x"); code != 400 {
		t.Errorf("/exit with a bad code = %d, want 400", code)
	}
}
