package formdata

import "bytes"

// finder finds a part's delimiter ("\r\n--boundary" or "\n--boundary") in a read of a part's
// body without looking at every byte, which bytes.Index does.
//
// A delimiter of m bytes holds m-1 adjacent pairs of bytes, so any occurrence of it covers exactly
// one of the pairs that start every m-1 bytes. The search looks only at those pairs, each in a
// table of the delimiter's pairs (8 KiB: one bit for each of the 65,536), and compares the
// delimiter where a pair is in it. In a package (compressed, so its bytes look random) a pair is
// in the table about once in 1,500 looks for a delimiter of 40 bytes, and the looks do not depend
// on each other, so the processor runs several at once: one look every m-1 bytes instead of one
// comparison a byte. Where pairs of the delimiter are common (a text part with runs of dashes),
// it stops sampling and hands the rest of the read to bytes.Index.
type finder struct {
	pat   []byte
	pairs [1 << 16 / 64]uint64
}

func newFinder(pat []byte) *finder {
	f := &finder{pat: pat}
	for i := 0; i+1 < len(pat); i++ {
		v := pair(pat[i], pat[i+1])
		f.pairs[v>>6] |= 1 << (v & 63)
	}
	return f
}

func pair(a, b byte) uint32 { return uint32(a) | uint32(b)<<8 }

// index is bytes.Index(s, f.pat).
func (f *finder) index(s []byte) int {
	m := len(f.pat)
	if m < 4 || len(s) < 4*m {
		return bytes.Index(s, f.pat)
	}
	k := m - 1 // the stride: each occurrence covers exactly one sampled pair
	hits := 0
	for p := m - 2; p+1 < len(s); p += k {
		v := pair(s[p], s[p+1])
		if f.pairs[v>>6]&(1<<(v&63)) == 0 {
			continue
		}
		// Occurrences whose sampled pair lies before p were ruled out, so none starts before
		// p-(m-2); one starting from there and covering p is found here, the first of them.
		lo := max(p-(m-2), 0)
		if i := bytes.Index(s[lo:min(p+m, len(s))], f.pat); i >= 0 {
			return lo + i
		}
		if hits++; hits > 8 && hits > (p>>4)/k {
			// More than one look in 16 needs a comparison: the part is not random-looking.
			if i := bytes.Index(s[lo:], f.pat); i >= 0 {
				return lo + i
			}
			return -1
		}
	}
	return -1
}
