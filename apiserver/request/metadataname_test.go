package request

import "testing"

func TestMetadataName(t *testing.T) {
	for in, want := range map[string]string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"a","labels":{"x":"y"},"name":"web"},"spec":{}}`: "web",
		`{"spec":{"containers":[{"name":"not-this"}]},"metadata":{"name":"late"}}`:                                "late",
		`{"metadata":{"generateName":"web-"}}`:                                                                    "",
		`not json`:                                                                                                "",
		`{"metadata":"odd"}`:                                                                                      "",
		`{"metadata":{"name":7}}`:                                                                                 "",
	} {
		if got := MetadataName([]byte(in)); got != want {
			t.Errorf("MetadataName(%s) = %q, want %q", in, got, want)
		}
	}
}
