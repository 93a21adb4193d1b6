// Package explain is kobectl explain: a kind's fields and their
// documentation, from the API's OpenAPI schema. It mirrors kubectl's
// pkg/cmd/explain.
package explain
