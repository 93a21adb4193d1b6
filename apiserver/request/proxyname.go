package request

import "strings"

// SplitSchemeNamePort reads the NAME of pods/NAME/proxy and
// services/NAME/proxy: [scheme:]name[:port]; ok is false for another
// scheme than http or https, or no name (as Kubernetes' own reading).
func SplitSchemeNamePort(id string) (scheme, name, port string, ok bool) {
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 1:
		name = parts[0]
	case 2:
		name, port = parts[0], parts[1]
	case 3:
		scheme, name, port = parts[0], parts[1], parts[2]
	default:
		return "", "", "", false
	}
	return scheme, name, port, name != "" && (scheme == "" || scheme == "http" || scheme == "https")
}
