//go:build race

package apiserver_test

// raceEnabled: the race detector slows etcd writes about five-fold; tests
// that measure memory over hundreds of large writes run without it (make
// test runs every test once without it).
const raceEnabled = true
