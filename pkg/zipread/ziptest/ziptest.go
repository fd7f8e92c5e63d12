// Package ziptest builds hostile zip archives for tests of what uploads them: one whose end
// record understates the entries its central directory holds, streamed so that a test never
// holds it in memory.
package ziptest

import (
	"bufio"
	"encoding/binary"
	"io"
)

// WriteHiddenEntries writes a zip archive whose central directory holds n headers (each a 47-byte
// record naming "a", with no local file behind it) while its end record declares n mod 65536
// entries, the 16-bit field's overflow that writers without zip64 produce. archive/zip reads every
// header; zipread.Open refuses it once n passes zipread.MaxEntries. n = 2,600,000 gives the
// 122 MB archive that once cost the server 700 MB. It returns the bytes written.
func WriteHiddenEntries(w io.Writer, n int) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var h [47]byte
	binary.LittleEndian.PutUint32(h[0:], 0x02014b50)
	binary.LittleEndian.PutUint16(h[4:], 20)
	binary.LittleEndian.PutUint16(h[6:], 20)
	binary.LittleEndian.PutUint16(h[28:], 1)
	h[46] = 'a'
	for range n {
		if _, err := bw.Write(h[:]); err != nil {
			return 0, err
		}
	}
	var end [22]byte
	binary.LittleEndian.PutUint32(end[0:], 0x06054b50)
	binary.LittleEndian.PutUint16(end[8:], uint16(n))
	binary.LittleEndian.PutUint16(end[10:], uint16(n))
	binary.LittleEndian.PutUint32(end[12:], uint32(47*n))
	if _, err := bw.Write(end[:]); err != nil {
		return 0, err
	}
	return int64(47*n + 22), bw.Flush()
}
