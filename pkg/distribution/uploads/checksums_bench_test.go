package uploads

import "testing"

// BenchmarkChecksums is the CPU the checksum verifier spends per byte of a stored package
// (SHA-256, SHA-512 and SHA-1 in one pass): `go test -bench Checksums ./pkg/distribution/uploads`.
func BenchmarkChecksums(b *testing.B) {
	buf := make([]byte, 8<<20)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		c := NewChecksums()
		_, _ = c.Write(buf)
		_, _, _ = c.Sums()
	}
}
