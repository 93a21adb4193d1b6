// Package get is kobectl get: objects listed or named, as tables
// (kubectl's columns, from api/printers, which the API server's Tables
// share), wide, yaml, json, name, jsonpath, custom-columns and
// go-template, sorted with --sort-by, and watched with -w. It mirrors
// kubectl's pkg/cmd/get and its printers.
package get
