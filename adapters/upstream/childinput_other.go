//go:build !unix

package upstream

// writeFD writes nothing where the pipe cannot be written without
// blocking (Windows' anonymous pipes): every message goes to the queue,
// which drain writes on a goroutine of its own, so that a caller still
// never waits for a child that stops reading.
func writeFD(uintptr, []byte) (int, error) { return 0, nil }
