// Package version is Kobune's version, which every binary reports
// (kubectl version's Client and Server Version, a node's kubeletVersion).
// It lives in api/ so that kobectl can print it without linking the API
// server (and with it etcd's server).
package version

// Kobune is the version of this source tree.
const Kobune = "v0.1.0-dev"
