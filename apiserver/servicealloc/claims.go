// Package servicealloc owns the Service address allocations: the
// cluster IP and node port ranges (Ranges), the admission step that picks
// a Service's addresses (Allocation), the claims a Service holds in
// storage (one etcd key each, written in the same transaction as the
// Service, so two Services never hold the same address), and the repair
// that makes the claims agree with the Services (Repair). It mirrors
// kube-apiserver's Service IP and node port allocators
// (pkg/registry/core/service/ipallocator, portallocator) and their repair
// controllers.
package servicealloc

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/storage"
)

// Claim names of Service allocations.
func IPClaim(ip string) string        { return "services/ip/" + ip }
func NodePortClaim(port int32) string { return "services/nodeport/" + strconv.Itoa(int(port)) }

// Claims is the storage.ClaimsFunc of Services: their cluster IP
// and node ports.
func Claims(value []byte) []string {
	var s struct {
		Spec struct {
			ClusterIPs []string `json:"clusterIPs"`
			Ports      []struct {
				NodePort int32 `json:"nodePort"`
			} `json:"ports"`
		} `json:"spec"`
	}
	if json.Unmarshal(value, &s) != nil {
		return nil
	}
	var out []string
	for _, ip := range s.Spec.ClusterIPs {
		if ip != "" && ip != core.ClusterIPNone {
			out = append(out, IPClaim(ip))
		}
	}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			out = append(out, NodePortClaim(p.NodePort))
		}
	}
	return out
}

// IPAddressClaims is the storage.ClaimsFunc of IPAddress objects: the
// address each names, the same claim a Service's cluster IP takes.
func IPAddressClaims(value []byte) []string {
	var a struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(value, &a) != nil || a.Metadata.Name == "" {
		return nil
	}
	return []string{IPClaim(a.Metadata.Name)}
}

// ClaimedError turns a claim held by another Service into Kubernetes'
// validation error on the field that asked for it, and an IPAddress for a
// held address into AlreadyExists.
func ClaimedError(o meta.Object, c *storage.ClaimedError) error {
	s, ok := o.(*core.Service)
	if !ok {
		holder := strings.TrimPrefix(c.Holder, storage.Prefix)
		if a, ok := o.(*networking.IPAddress); ok {
			return status.Errorf(codes.AlreadyExists, "ipaddresses.networking.k8s.io %q already exists: the address is held by %s", a.Name, holder)
		}
		return status.Errorf(codes.AlreadyExists, "%v", c)
	}
	var errs v.ErrorList
	if strings.HasPrefix(c.Claim, "services/ip/") {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "clusterIPs").Index(0), strings.TrimPrefix(c.Claim, "services/ip/"), "provided IP is already allocated"))
	}
	for i, p := range s.Spec.Ports {
		if c.Claim == NodePortClaim(p.NodePort) {
			errs = append(errs, v.NewInvalid(v.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort, "provided port is already allocated"))
			break
		}
	}
	return status.Error(codes.InvalidArgument, fmt.Sprintf("Service %q is invalid: %v", s.Name, errs.ToError()))
}
