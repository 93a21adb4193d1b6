package rest

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// A pod's HTML answer through pods/proxy or services/proxy has its links
// rewritten, as kube-apiserver's proxy transport rewrites them: a link to
// an absolute path of the pod's (no host, or the pod's own) is put under
// the proxy path, so that a browser that follows it stays in the proxy;
// so is a redirect's Location. Links to other hosts, relative links and
// compressed bodies are passed on as they are.

// linkAttrs are the attributes that hold URLs, by element (Kubernetes'
// list).
var linkAttrs = map[string][]string{
	"a": {"href"}, "applet": {"codebase"}, "area": {"href"}, "audio": {"src"}, "base": {"href"}, "blockquote": {"cite"},
	"body": {"background"}, "button": {"formaction"}, "command": {"icon"}, "del": {"cite"}, "embed": {"src"}, "form": {"action"},
	"frame": {"longdesc", "src"}, "head": {"profile"}, "html": {"manifest"}, "iframe": {"longdesc", "src"},
	"img": {"longdesc", "src", "usemap"}, "input": {"src", "usemap", "formaction"}, "ins": {"cite"}, "link": {"href"},
	"object": {"classid", "codebase", "data", "usemap"}, "q": {"cite"}, "script": {"src"}, "source": {"src"}, "video": {"poster", "src"},
}

// rewriteURL puts raw under prefix when it is an absolute path of the pod
// at podHost (no host, or that host); anything else stays.
func rewriteURL(raw, podHost, prefix string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host != "" && u.Host != podHost || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, prefix+"/") {
		return raw
	}
	trailing := strings.HasSuffix(u.Path, "/")
	u.Scheme, u.Host, u.User = "", "", nil
	u.Path = path.Join(prefix, u.Path)
	if trailing && !strings.HasSuffix(u.Path, "/") {
		u.Path += "/" // path.Join drops it
	}
	return u.String()
}

// rewriteResponse rewrites a proxied answer's Location and, for an
// uncompressed HTML body, its links (streamed: the body is never held
// whole).
func rewriteResponse(resp *http.Response, podHost, prefix string) {
	if loc := resp.Header.Get("Location"); loc != "" {
		resp.Header.Set("Location", rewriteURL(loc, podHost, prefix))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/html" || resp.Body == nil || resp.Header.Get("Content-Encoding") != "" && resp.Header.Get("Content-Encoding") != "identity" {
		return
	}
	body := resp.Body
	pr, pw := io.Pipe()
	go func() {
		defer body.Close()
		pw.CloseWithError(rewriteHTML(body, pw, podHost, prefix))
	}()
	resp.Body = pr
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

// rewriteHTML copies an HTML document, its links rewritten.
func rewriteHTML(in io.Reader, out io.Writer, podHost, prefix string) error {
	z := html.NewTokenizer(in)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() == io.EOF {
				return nil
			}
			return z.Err()
		}
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			t := z.Token()
			if attrs, ok := linkAttrs[t.Data]; ok {
				for i := range t.Attr {
					if slices.Contains(attrs, t.Attr[i].Key) {
						t.Attr[i].Val = rewriteURL(t.Attr[i].Val, podHost, prefix)
					}
				}
				if _, err := io.WriteString(out, t.String()); err != nil {
					return err
				}
				continue
			}
		}
		if _, err := out.Write(z.Raw()); err != nil {
			return err
		}
	}
}
