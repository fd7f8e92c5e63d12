package apple

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"howett.net/plist"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Limits on the shape of a property list, checked before howett.net/plist decodes it: its parsers
// recurse once per nesting level, and a binary plist may share one container many times (a DAG
// that expands exponentially when decoded into Go values).
const (
	maxPlistDepth = 128
	maxPlistNodes = 500_000
)

// plistDict is a decoded property-list dictionary.
type plistDict map[string]any

// decodePlist decodes a binary or XML property list whose root is a dictionary. what names the
// file in error messages ("Info.plist").
func decodePlist(data []byte, what string) (plistDict, error) {
	var err error
	if bytes.HasPrefix(data, []byte("bplist")) {
		err = checkBinaryPlist(data)
	} else {
		err = checkXMLPlist(data)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "%s is not a valid property list", what)
	}
	var root any
	if _, err := plist.Unmarshal(data, &root); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "%s is not a valid property list", what)
	}
	d, ok := root.(map[string]any)
	if !ok {
		return nil, errs.Invalidf("%s is not a valid property list (its root is not a dictionary)", what)
	}
	return d, nil
}

// checkXMLPlist checks that data is well-formed XML with a <plist> root, nested at most
// maxPlistDepth deep, so the recursive plist parser neither recurses unboundedly nor falls back to
// its OpenStep text parser (which Info.plists never use).
func checkXMLPlist(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	depth, elements := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if elements++; elements == 1 && t.Name.Local != "plist" {
				return fmt.Errorf("root element is <%.40s>, not <plist>", t.Name.Local)
			}
			if depth++; depth > maxPlistDepth {
				return fmt.Errorf("nested more than %d levels deep", maxPlistDepth)
			}
		case xml.EndElement:
			depth--
		}
	}
	if elements == 0 {
		return errors.New("neither XML nor binary")
	}
	return nil
}

// checkBinaryPlist walks a binary plist's object graph without recursion and refuses cycles,
// nesting deeper than maxPlistDepth, and graphs expanding to more than maxPlistNodes values.
func checkBinaryPlist(b []byte) error {
	const trailerLen = 32
	if len(b) < 8+trailerLen {
		return errors.New("truncated binary plist")
	}
	t := b[len(b)-trailerLen:]
	offSize, refSize := int(t[6]), int(t[7])
	n, top, table := binary.BigEndian.Uint64(t[8:]), binary.BigEndian.Uint64(t[16:]), binary.BigEndian.Uint64(t[24:])
	end := uint64(len(b) - trailerLen)
	if offSize < 1 || offSize > 8 || refSize < 1 || refSize > 8 || n == 0 || n > end || top >= n ||
		table < 8 || table > end || n > (end-table)/uint64(offSize) {
		return errors.New("bad binary plist trailer")
	}
	be := func(p []byte) uint64 {
		var v uint64
		for _, c := range p {
			v = v<<8 | uint64(c)
		}
		return v
	}
	// children returns the refs area of container object i (nil for scalars).
	children := func(i uint64) ([]byte, error) {
		o := table + i*uint64(offSize)
		off := be(b[o : o+uint64(offSize)])
		if off < 8 || off >= table {
			return nil, errors.New("object offset out of range")
		}
		marker := b[off]
		kind, count, pos := marker>>4, uint64(marker&0x0f), off+1
		if kind != 0xA && kind != 0xD {
			return nil, nil
		}
		if count == 0x0f {
			if pos >= table || b[pos]>>4 != 0x1 {
				return nil, errors.New("bad container length")
			}
			size := uint64(1) << (b[pos] & 0x0f)
			if size > 8 || pos+1+size > table {
				return nil, errors.New("bad container length")
			}
			count, pos = be(b[pos+1:pos+1+size]), pos+1+size
		}
		if kind == 0xD {
			if count > table {
				return nil, errors.New("container overruns the object table")
			}
			count *= 2
		}
		if count > (table-pos)/uint64(refSize) {
			return nil, errors.New("container overruns the object table")
		}
		return b[pos : pos+count*uint64(refSize)], nil
	}
	const (
		unseen = iota
		active
		done
	)
	state := make([]byte, n)
	nodes := make([]uint64, n) // expanded size of each finished object
	type frame struct {
		obj  uint64
		refs []byte
		size uint64
	}
	refs, err := children(top)
	if err != nil {
		return err
	}
	stack := []frame{{obj: top, refs: refs, size: 1}}
	state[top] = active
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if len(f.refs) == 0 {
			state[f.obj], nodes[f.obj] = done, f.size
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				p := &stack[len(stack)-1]
				if p.size += f.size; p.size > maxPlistNodes {
					return fmt.Errorf("expands to more than %d values", maxPlistNodes)
				}
			}
			continue
		}
		c := be(f.refs[:refSize])
		f.refs = f.refs[refSize:]
		if c >= n {
			return errors.New("object reference out of range")
		}
		switch state[c] {
		case active:
			return errors.New("self-referential container")
		case done:
			if f.size += nodes[c]; f.size > maxPlistNodes {
				return fmt.Errorf("expands to more than %d values", maxPlistNodes)
			}
			continue
		}
		refs, err := children(c)
		if err != nil {
			return err
		}
		if len(stack) >= maxPlistDepth {
			return fmt.Errorf("nested more than %d levels deep", maxPlistDepth)
		}
		state[c] = active
		stack = append(stack, frame{obj: c, refs: refs, size: 1})
	}
	return nil
}

// str returns the string value of key, formatting numbers (some tools write CFBundleVersion as an
// integer); "" when absent or of another type.
func (d plistDict) str(key string) string {
	switch v := d[key].(type) {
	case string:
		return strings.TrimSpace(v)
	case uint64:
		return strconv.FormatUint(v, 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// dict returns the dictionary value of key, nil when absent or of another type.
func (d plistDict) dict(key string) plistDict {
	if m, ok := d[key].(map[string]any); ok {
		return m
	}
	return nil
}

// strs returns the strings of an array value (or a single string value) of key.
func (d plistDict) strs(key string) []string {
	switch v := d[key].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// ints returns the integers of an array value (or a single value) of key; numeric strings count,
// since old Info.plists wrote UIDeviceFamily as strings.
func (d plistDict) ints(key string) []int64 {
	one := func(v any) (int64, bool) {
		switch v := v.(type) {
		case uint64:
			return int64(min(v, 1<<62)), true
		case int64:
			return v, true
		case float64:
			return int64(v), true
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
		return 0, false
	}
	vals, ok := d[key].([]any)
	if !ok {
		vals = []any{d[key]}
	}
	var out []int64
	for _, v := range vals {
		if n, ok := one(v); ok {
			out = append(out, n)
		}
	}
	return out
}

// bool returns the boolean value of key (false when absent or of another type).
func (d plistDict) bool(key string) bool {
	b, _ := d[key].(bool)
	return b
}

// time returns the date value of key, zero when absent or of another type.
func (d plistDict) time(key string) time.Time {
	t, _ := d[key].(time.Time)
	return t
}

// appleBundle holds what Info.plist says about a bundle, shared by the iOS and macOS parsers.
type appleBundle struct {
	Name, BundleID, ReleaseVersion, BuildVersion string
}

// readAppleBundle reads the identity of a bundle from its Info.plist. A bundle without an identifier
// cannot be distributed, so that is an error; a missing version falls back to the other one, as
// old bundles often carry only CFBundleVersion.
func readAppleBundle(d plistDict, what string) (appleBundle, error) {
	b := appleBundle{
		Name:           appleFirst(d.str("CFBundleDisplayName"), d.str("CFBundleName"), d.str("CFBundleExecutable")),
		BundleID:       d.str("CFBundleIdentifier"),
		ReleaseVersion: d.str("CFBundleShortVersionString"),
		BuildVersion:   d.str("CFBundleVersion"),
	}
	if b.BundleID == "" {
		return b, errs.Invalidf("%s has no CFBundleIdentifier", what)
	}
	if b.ReleaseVersion == "" && b.BuildVersion == "" {
		return b, errs.Invalidf("%s has neither CFBundleShortVersionString nor CFBundleVersion", what)
	}
	b.ReleaseVersion = appleFirst(b.ReleaseVersion, b.BuildVersion)
	b.BuildVersion = appleFirst(b.BuildVersion, b.ReleaseVersion)
	return b, nil
}

func appleFirst(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
