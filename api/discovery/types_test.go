package discovery

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/meta"
)

// An endpoint holds 1 to 100 addresses, as Kubernetes validates it (the
// conformance suite's EndpointSlice API test writes two per endpoint).
func TestEndpointAddressesCount(t *testing.T) {
	slice := func(addrs ...string) *EndpointSlice {
		return &EndpointSlice{ObjectMeta: meta.ObjectMeta{Name: "s", Namespace: "default"}, AddressType: AddressTypeIPv4, Endpoints: []Endpoint{{Addresses: addrs}}}
	}
	if err := ValidateEndpointSlice(slice("1.2.3.4", "5.6.7.8")).ToError(); err != nil {
		t.Errorf("two addresses: %v", err)
	}
	if err := ValidateEndpointSlice(slice()).ToError(); err == nil || !strings.Contains(err.Error(), "endpoints[0].addresses: Required value: must contain at least 1 address") {
		t.Errorf("no address: %v", err)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = "10.0.0.1"
	}
	if err := ValidateEndpointSlice(slice(many...)).ToError(); err == nil || !strings.Contains(err.Error(), "must have at most 100 items") {
		t.Errorf("101 addresses: %v", err)
	}
}
