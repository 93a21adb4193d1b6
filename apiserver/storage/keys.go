package storage

// Prefix is the root of every Kobune key in etcd.
const Prefix = "/kobune/"

// Key returns the key of one object; namespace is empty for cluster-scoped kinds.
func Key(resource, namespace, name string) string {
	if namespace == "" {
		return Prefix + resource + "/" + name
	}
	return Prefix + resource + "/" + namespace + "/" + name
}

// ListPrefix returns the prefix under which a resource's objects (in one
// namespace, or in all when namespace is empty) are stored.
func ListPrefix(resource, namespace string) string {
	if namespace == "" {
		return Prefix + resource + "/"
	}
	return Prefix + resource + "/" + namespace + "/"
}
