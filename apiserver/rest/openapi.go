package rest

import (
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/kobune/kobune/api/openapi"
)

// The OpenAPI documents (api/openapi builds them from Kobune's own types
// and the custom kinds' schemas): /openapi/v3 lists one document per group
// version, each named with the hash of its content so that clients cache
// it for as long as it does not change (kube-apiserver's scheme);
// /openapi/v2 is the whole API in Swagger 2.0 JSON, with an ETag. kubectl
// uses v3 (its default since Kubernetes 1.27) for explain, apply and field
// validation. The documents are made when first asked for and again when
// the custom kinds changed (a definition written), not per request.

type openAPIDocs struct {
	version any // Kinds.CustomVersion when made
	v2      []byte
	v2Hash  string
	v3      map[string][]byte // "apis/apps/v1" → document
	hash    map[string]string
}

func (s *Handler) openAPIDocs() *openAPIDocs {
	v := s.cfg.Kinds.CustomVersion()
	if d := s.openapi.Load(); d != nil && d.version == v {
		return d
	}
	s.openapiMu.Lock() // one request makes them; the others wait for it
	defer s.openapiMu.Unlock()
	if d := s.openapi.Load(); d != nil && d.version == v {
		return d
	}
	custom := s.cfg.Kinds.Custom()
	d := &openAPIDocs{version: v, v2: openapi.V2(custom), v3: map[string][]byte{}, hash: map[string]string{}}
	d.v2Hash = contentHash(d.v2)
	for _, p := range openapi.V3Paths(custom) {
		b, _ := openapi.V3(p, custom)
		d.v3[p], d.hash[p] = b, contentHash(b)
	}
	s.openapi.Store(d)
	return d
}

func contentHash(b []byte) string {
	sum := sha512.Sum512(b)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

func (s *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	if !s.pathAllowed(w, r) {
		return
	}
	docs := s.openAPIDocs()
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/openapi/v2" && !acceptsJSON(r):
		// client-go reads v2 only in protobuf: a Swagger 2.0 document with
		// no definitions, so that kubectl, which validates client-side
		// only kinds the server does not validate itself, skips what it
		// cannot look up instead of failing (field 1 is "swagger").
		w.Header().Set("Content-Type", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte{0x0a, 0x03, '2', '.', '0'})
	case p == "/openapi/v2":
		w.Header().Set("Etag", `"`+docs.v2Hash+`"`)
		if r.Header.Get("If-None-Match") == `"`+docs.v2Hash+`"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeJSON(w, http.StatusOK, docs.v2)
	case p == "/openapi/v3":
		paths := map[string]any{}
		for gv, h := range docs.hash {
			paths[gv] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + h}
		}
		writeObject(w, http.StatusOK, map[string]any{"paths": paths})
	default:
		gv := strings.TrimPrefix(p, "/openapi/v3/")
		b, ok := docs.v3[gv]
		if !ok {
			writeError(w, errNotFound(r.URL.Path), nil)
			return
		}
		if r.URL.Query().Get("hash") == docs.hash[gv] {
			w.Header().Set("Cache-Control", "public, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		w.Header().Set("Etag", `"`+docs.hash[gv]+`"`)
		writeJSON(w, http.StatusOK, b)
	}
}

// acceptsJSON: the Accept header allows JSON (or says nothing).
func acceptsJSON(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return a == "" || strings.Contains(a, "application/json") || strings.Contains(a, "*/*")
}
