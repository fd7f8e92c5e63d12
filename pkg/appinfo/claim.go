package appinfo

import (
	"errors"
	"io"

	"github.com/slipwayhq/slipway/pkg/zipread"
)

// errNotHeld is what a Partial answers for bytes it does not hold.
var errNotHeld = errors.New("appinfo: bytes not held")

// partial is a file of size bytes of which only its first bytes (head) and last bytes (tail)
// are held: a read of anything else fails, and says so in missed.
type partial struct {
	head, tail []byte
	size       int64
	missed     bool
}

func (p *partial) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off >= p.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(b)), p.size)
	tailStart := p.size - int64(len(p.tail))
	switch {
	case end <= int64(len(p.head)):
		n := copy(b, p.head[off:end])
		return n, eofIf(end < off+int64(len(b)))
	case off >= tailStart:
		n := copy(b, p.tail[off-tailStart:end-tailStart])
		return n, eofIf(end < off+int64(len(b)))
	}
	p.missed = true
	return 0, errNotHeld
}

func eofIf(short bool) error {
	if short {
		return io.EOF
	}
	return nil
}

// ClaimPlatform says which platform a file of size bytes is a package of, from its first bytes
// (head) and its last bytes (tail: for a zip, from its central directory, or its last 64 KiB +
// 22 bytes where its end record is looked for, whichever comes first, to its end) alone,
// before the rest of it arrives: the families' claims are asked as Parse asks them (family.go),
// with nothing parsed. ok is false when that cannot be said for sure: no family claims the file,
// the claiming family does not say its platform (Family.Platform), or a claim needed bytes that
// head and tail do not hold. The upload box refuses a build of the wrong platform for its
// channel with it before sending the file (a refusal after the whole file was sent wastes the
// uploader's time).
func ClaimPlatform(head, tail []byte, size int64) (p Platform, ok bool) {
	if size <= 0 || int64(len(head)) > size || int64(len(tail)) > size {
		return "", false
	}
	r := &partial{head: head, tail: tail, size: size}
	if tailStart := size - int64(len(tail)); int64(len(head)) >= tailStart {
		// Together they hold the whole file.
		r.head, r.tail = append(head[:tailStart:tailStart], tail...), nil
	}
	var f *Family
	var a *zipread.Archive
	if zipread.IsZip(r, size) {
		var err error
		if a, err = zipread.Open(r, size); err != nil {
			return "", false
		}
		f, _ = claimZipFamily(a)
	} else {
		f, _ = claimFileFamily(r, size)
	}
	if r.missed || f == nil || f.Platform == nil {
		return "", false
	}
	p = f.Platform(a)
	return p, p != "" && !r.missed
}
