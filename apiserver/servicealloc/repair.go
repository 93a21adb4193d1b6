package servicealloc

import (
	"context"
	"strings"

	"github.com/kobune/kobune/apiserver/storage"
)

// Repair makes the claims agree with the Services and IPAddresses (the job of
// kube-apiserver's repair controllers): a claim whose holder is gone or no
// longer holds it is released, a Service's missing claim is taken. Claims
// are written with their Services, so this finds work only after a crash
// of an older version or a hand edit of etcd; it reports what it fixed.
func Repair(ctx context.Context, store *storage.Store, logf func(string, ...any)) (fixed int, err error) {
	want := map[string]string{} // claim → holder
	for resource, claims := range map[string]storage.ClaimsFunc{"services": Claims, "ipaddresses": IPAddressClaims} {
		kvs, _, err := store.List(ctx, storage.ListPrefix(resource, ""))
		if err != nil {
			return 0, err
		}
		for _, kv := range kvs {
			for _, c := range claims(kv.Value) {
				want[c] = kv.Key
			}
		}
	}
	have, err := store.Claims(ctx, "services/")
	if err != nil {
		return 0, err
	}
	for c, holder := range have {
		if want[c] != holder {
			if err := store.DropClaim(ctx, c, holder); err != nil {
				return fixed, err
			}
			logf("service allocation repair: released %s (held by %s, which no longer holds it)", c, strings.TrimPrefix(holder, storage.Prefix))
			fixed++
		}
	}
	for c, holder := range want {
		if have[c] == holder {
			continue
		}
		ok, err := store.PutClaim(ctx, c, holder)
		if err != nil {
			return fixed, err
		}
		if ok {
			logf("service allocation repair: %s is held by %s again", c, strings.TrimPrefix(holder, storage.Prefix))
			fixed++
		} else if h, _ := store.Holder(ctx, c); h != holder {
			logf("service allocation repair: %s and %s both have %s; fix one of them", strings.TrimPrefix(holder, storage.Prefix), strings.TrimPrefix(h, storage.Prefix), c)
		}
	}
	return fixed, nil
}
