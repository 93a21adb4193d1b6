package client

import (
	"context"
	"strings"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/proto/apipb"
)

// Discover asks the server which kinds it serves and returns them: the
// built-in kinds and those its CustomResourceDefinitions add, which a
// client knows only this way (kubectl's discovery client). Custom kinds'
// objects are meta.Unstructured.
func (c *Client) Discover(ctx context.Context) (*scheme.Kinds, error) {
	reply, err := c.API.Discovery(ctx, &apipb.DiscoveryRequest{})
	if err != nil {
		return nil, err
	}
	var custom []*scheme.Kind
	for _, d := range reply.Kinds {
		if !d.Custom {
			continue
		}
		group, version, _ := strings.Cut(d.ApiVersion, "/")
		var others []string
		for _, v := range d.OtherVersions {
			others = append(others, strings.TrimPrefix(v, group+"/"))
		}
		k := scheme.NewCustomKind(scheme.CustomKindSpec{Group: group, Kind: d.Kind, Plural: d.Plural, Singular: d.Singular,
			StorageVersion: version, OtherVersions: others, Namespaced: d.Namespaced, HasStatus: d.HasStatus,
			ShortNames: d.ShortNames, Categories: d.Categories, ConvertedByServer: d.ConvertedByWebhook})
		for _, c := range d.Columns {
			k.Custom.Columns = append(k.Custom.Columns, scheme.Column{Name: c.Name, Type: c.Type, JSONPath: c.JsonPath, Priority: c.Priority})
		}
		custom = append(custom, k)
	}
	kinds := scheme.NewKinds()
	kinds.SetCustom(custom)
	return kinds, nil
}
