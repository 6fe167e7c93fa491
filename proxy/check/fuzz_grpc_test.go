package check

import (
	"encoding/binary"
	"testing"
)

// FuzzHealthStatus feeds healthStatus, the decoder of a server's
// grpc.health.v1 HealthCheckResponse, arbitrary bytes: it never panics,
// and a well-formed response with status v (field 1), after unknown
// fields of every wire type, decodes to v.
func FuzzHealthStatus(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 0x08, 0x01}, uint64(1))
	f.Add([]byte{0, 0, 0, 0, 0}, uint64(0))
	f.Add([]byte{1, 0, 0, 0, 2, 0x08, 0x01}, uint64(3))
	f.Add([]byte{0, 0, 0, 0, 3, 0x12, 0x05, 0x01}, uint64(1<<40))
	f.Fuzz(func(t *testing.T, b []byte, v uint64) {
		healthStatus(b)
		// unknown fields: 2 (varint), 3 (bytes), 4 (fixed64), 5 (fixed32)
		msg := []byte{0x10, 0x7f, 0x1a, 0x02, 'a', 'b', 0x21, 1, 2, 3, 4, 5, 6, 7, 8, 0x2d, 1, 2, 3, 4, 0x08}
		msg = binary.AppendUvarint(msg, v)
		frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
		if got, ok := healthStatus(append(frame, msg...)); !ok || got != v {
			t.Fatalf("status %d encoded: got %d, %v", v, got, ok)
		}
	})
}
