package registry

import "google.golang.org/grpc/metadata"

// Sender is where a streaming verb (watch, logs, attach) writes: a gRPC
// stream, or a REST response (JSON lines, plain text, a WebSocket). A
// gRPC server stream is one as it is.
type Sender[T any] interface {
	Send(*T) error
	// SendHeader tells the client that the call was accepted, before the
	// first message (a REST watch answers its headers then, so a client
	// is not held until the first change).
	SendHeader(metadata.MD) error
}

// Duplex is a bidirectional stream (exec, port-forward): what the client
// sends after its first message comes from Recv.
type Duplex[In, Out any] interface {
	Sender[Out]
	Recv() (*In, error)
}
