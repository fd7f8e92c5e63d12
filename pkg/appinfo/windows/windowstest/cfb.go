package windowstest

import (
	"encoding/binary"
	"errors"
	"io"
	"sort"
	"unicode"
	"unicode/utf16"
)

// CFBStream is one stream of a compound file: Data, or Size bytes that Fill writes (for large
// streams generated on the fly).
type CFBStream struct {
	Name []uint16 // as stored: see MSIStreamName for an installer's packed names
	Data []byte
	Size int64
	Fill func(w io.Writer) error
}

func (s CFBStream) size() int64 {
	if s.Fill != nil {
		return s.Size
	}
	return int64(len(s.Data))
}

const (
	cfbSector     = 512
	cfbMini       = 64
	cfbCutoff     = 4096
	cfbEnd        = 0xfffffffe
	cfbFree       = 0xffffffff
	cfbFATSect    = 0xfffffffd
	cfbDIFATSect  = 0xfffffffc
	cfbNoStream   = 0xffffffff
	cfbPerSector  = cfbSector / 4
	cfbDIFATInHdr = 109
)

// WriteCFB streams a version 3 compound file (512-byte sectors) holding the streams in its root
// storage, with root CLSID clsid. The layout is the one msitools writes: the large streams
// first (each contiguous), then the mini stream, the mini FAT, the directory, and the FAT and
// DIFAT sectors last.
func WriteCFB(w io.Writer, clsid [16]byte, streams []CFBStream) (int64, error) {
	type placed struct {
		CFBStream
		start uint32
	}
	var (
		big, small []placed
		sec        uint32 // next free sector
		mini       []byte // the mini stream
		chains     [][2]uint32
	)
	for _, s := range streams {
		p := placed{CFBStream: s, start: cfbEnd}
		switch n := s.size(); {
		case n == 0:
			small = append(small, p)
		case n < cfbCutoff:
			if s.Fill != nil {
				return 0, errors.New("windowstest: a filled stream must be at least 4096 bytes")
			}
			p.start = uint32(len(mini) / cfbMini)
			mini = append(mini, s.Data...)
			for len(mini)%cfbMini != 0 {
				mini = append(mini, 0)
			}
			small = append(small, p)
		default:
			p.start = sec
			k := uint32((n + cfbSector - 1) / cfbSector)
			chains = append(chains, [2]uint32{sec, k})
			sec += k
			big = append(big, p)
		}
	}
	miniStart, miniSecs := uint32(cfbEnd), uint32((len(mini)+cfbSector-1)/cfbSector)
	if miniSecs > 0 {
		miniStart = sec
		chains = append(chains, [2]uint32{sec, miniSecs})
		sec += miniSecs
	}
	miniFAT := make([]byte, 0)
	for i := range len(mini) / cfbMini {
		next := uint32(i + 1)
		if i+1 == len(mini)/cfbMini {
			next = cfbEnd
		}
		miniFAT = binary.LittleEndian.AppendUint32(miniFAT, next)
	}
	// Each small stream's mini chain ends at its own last mini sector.
	for _, p := range small {
		if n := p.size(); n > 0 {
			last := p.start + uint32((n+cfbMini-1)/cfbMini) - 1
			binary.LittleEndian.PutUint32(miniFAT[4*last:], cfbEnd)
		}
	}
	for len(miniFAT)%cfbSector != 0 {
		miniFAT = binary.LittleEndian.AppendUint32(miniFAT, cfbFree)
	}
	miniFATStart, miniFATSecs := uint32(cfbEnd), uint32(len(miniFAT)/cfbSector)
	if miniFATSecs > 0 {
		miniFATStart = sec
		chains = append(chains, [2]uint32{sec, miniFATSecs})
		sec += miniFATSecs
	}
	// Directory: the root, then the streams, as a balanced tree in CFB order.
	all := append(append([]placed(nil), big...), small...)
	sort.Slice(all, func(i, j int) bool { return cfbLess(all[i].Name, all[j].Name) })
	dir := make([]byte, 128*(1+len(all)))
	for len(dir)%cfbSector != 0 {
		dir = append(dir, make([]byte, 128)...)
	}
	for i := range len(dir) / 128 {
		e := dir[i*128:]
		binary.LittleEndian.PutUint32(e[68:], cfbNoStream)
		binary.LittleEndian.PutUint32(e[72:], cfbNoStream)
		binary.LittleEndian.PutUint32(e[76:], cfbNoStream)
	}
	putName := func(e []byte, name []uint16) {
		for i, u := range name {
			binary.LittleEndian.PutUint16(e[2*i:], u)
		}
		binary.LittleEndian.PutUint16(e[64:], uint16(2*(len(name)+1)))
	}
	root := dir[:128]
	putName(root, utf16.Encode([]rune("Root Entry")))
	root[66], root[67] = 5, 1
	copy(root[80:], clsid[:])
	binary.LittleEndian.PutUint32(root[116:], miniStart)
	binary.LittleEndian.PutUint64(root[120:], uint64(len(mini)))
	var tree func(lo, hi int) uint32
	tree = func(lo, hi int) uint32 {
		if lo >= hi {
			return cfbNoStream
		}
		mid := (lo + hi) / 2
		e := dir[(1+mid)*128:]
		putName(e, all[mid].Name)
		e[66], e[67] = 2, 1
		binary.LittleEndian.PutUint32(e[68:], tree(lo, mid))
		binary.LittleEndian.PutUint32(e[72:], tree(mid+1, hi))
		binary.LittleEndian.PutUint32(e[116:], all[mid].start)
		binary.LittleEndian.PutUint64(e[120:], uint64(all[mid].size()))
		return uint32(1 + mid)
	}
	binary.LittleEndian.PutUint32(root[76:], tree(0, len(all)))
	dirStart, dirSecs := sec, uint32(len(dir)/cfbSector)
	chains = append(chains, [2]uint32{sec, dirSecs})
	sec += dirSecs
	// FAT and DIFAT sectors: enough FAT entries for every sector, themselves included.
	var fatSecs, difatSecs uint32
	for {
		total := sec + fatSecs + difatSecs
		if fatSecs*cfbPerSector >= total {
			break
		}
		fatSecs++
		if fatSecs > cfbDIFATInHdr {
			difatSecs = (fatSecs - cfbDIFATInHdr + cfbPerSector - 2) / (cfbPerSector - 1)
		}
	}
	fatStart, difatStart := sec, sec+fatSecs
	fat := make([]uint32, fatSecs*cfbPerSector)
	for i := range fat {
		fat[i] = cfbFree
	}
	for _, c := range chains {
		for i := range c[1] {
			fat[c[0]+i] = c[0] + i + 1
		}
		fat[c[0]+c[1]-1] = cfbEnd
	}
	for i := range fatSecs {
		fat[fatStart+i] = cfbFATSect
	}
	for i := range difatSecs {
		fat[difatStart+i] = cfbDIFATSect
	}

	h := make([]byte, cfbSector)
	copy(h, []byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1})
	binary.LittleEndian.PutUint16(h[24:], 0x3e)
	binary.LittleEndian.PutUint16(h[26:], 3)
	binary.LittleEndian.PutUint16(h[28:], 0xfffe)
	binary.LittleEndian.PutUint16(h[30:], 9)
	binary.LittleEndian.PutUint16(h[32:], 6)
	binary.LittleEndian.PutUint32(h[44:], fatSecs)
	binary.LittleEndian.PutUint32(h[48:], dirStart)
	binary.LittleEndian.PutUint32(h[56:], cfbCutoff)
	binary.LittleEndian.PutUint32(h[60:], miniFATStart)
	binary.LittleEndian.PutUint32(h[64:], miniFATSecs)
	binary.LittleEndian.PutUint32(h[68:], cfbEnd)
	if difatSecs > 0 {
		binary.LittleEndian.PutUint32(h[68:], difatStart)
	}
	binary.LittleEndian.PutUint32(h[72:], difatSecs)
	for i := range cfbDIFATInHdr {
		v := uint32(cfbFree)
		if uint32(i) < fatSecs {
			v = fatStart + uint32(i)
		}
		binary.LittleEndian.PutUint32(h[76+4*i:], v)
	}

	cw := &counter{w: w}
	pad := func() error {
		if r := cw.n % cfbSector; r != 0 {
			_, err := cw.Write(make([]byte, cfbSector-r))
			return err
		}
		return nil
	}
	if _, err := cw.Write(h); err != nil {
		return cw.n, err
	}
	for _, p := range big {
		var err error
		if p.Fill != nil {
			start := cw.n
			err = p.Fill(cw)
			if err == nil && cw.n-start != p.Size {
				err = errors.New("windowstest: a stream's Fill wrote the wrong number of bytes")
			}
		} else {
			_, err = cw.Write(p.Data)
		}
		if err == nil {
			err = pad()
		}
		if err != nil {
			return cw.n, err
		}
	}
	for _, b := range [][]byte{mini, miniFAT, dir} {
		if _, err := cw.Write(b); err != nil {
			return cw.n, err
		}
		if err := pad(); err != nil {
			return cw.n, err
		}
	}
	fb := make([]byte, 0, 4*len(fat))
	for _, v := range fat {
		fb = binary.LittleEndian.AppendUint32(fb, v)
	}
	if _, err := cw.Write(fb); err != nil {
		return cw.n, err
	}
	for i := range difatSecs {
		d := make([]byte, cfbSector)
		for j := range uint32(cfbPerSector - 1) {
			v := uint32(cfbFree)
			if k := cfbDIFATInHdr + i*(cfbPerSector-1) + j; k < fatSecs {
				v = fatStart + k
			}
			binary.LittleEndian.PutUint32(d[4*j:], v)
		}
		next := uint32(cfbEnd)
		if i+1 < difatSecs {
			next = difatStart + i + 1
		}
		binary.LittleEndian.PutUint32(d[cfbSector-4:], next)
		if _, err := cw.Write(d); err != nil {
			return cw.n, err
		}
	}
	return cw.n, nil
}

// cfbLess orders directory names as [MS-CFB] does: shorter first, then by upper-cased code units.
func cfbLess(a, b []uint16) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	for i := range a {
		x, y := unicode.ToUpper(rune(a[i])), unicode.ToUpper(rune(b[i]))
		if x != y {
			return x < y
		}
	}
	return false
}
