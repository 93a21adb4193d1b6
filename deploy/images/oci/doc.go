// Package oci writes container images as OCI image-layout tarballs — the
// format `ctr images import` and the containerd client's Import read —
// without Docker, a daemon or a registry. Kobune's labs and tests build
// their images with it (deploy/images/build) and load them into each node's
// containerd, so nothing is ever pulled from a remote registry.
//
// An image here is one layer: a list of files (regular files, directories,
// symlinks) plus an image config (entrypoint, env, ports). Output is
// byte-for-byte reproducible: fixed timestamps, sorted entries, gzip
// without a name or time.
package oci
