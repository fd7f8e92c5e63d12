package debuginfo

import (
	"bytes"
	"crypto/sha1"
	"encoding/xml"
	"errors"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// proguardNamespace is Zealot's (app-info's) UUIDv5 namespace for mapping files: the UUIDv5 of
// the DNS name "icyleaf.com", 5c87d8ec-e11f-5c5d-bc36-1b36b714429b.
var proguardNamespace = [16]byte{0x5c, 0x87, 0xd8, 0xec, 0xe1, 0x1f, 0x5c, 0x5d, 0xbc, 0x36, 0x1b, 0x36, 0xb7, 0x14, 0x42, 0x9b}

// androidNS is the XML namespace of android: attributes.
const androidNS = "http://schemas.android.com/apk/res/android"

// proguard describes the Android files, or returns nil when there are none. The mapping file is
// hashed and R.txt measured as they stream; only the manifest is held in memory.
func (p *parser) proguard(a androidFiles) (*Proguard, error) {
	if a.mapping == nil && a.rTxt == nil && a.manifest == nil {
		return nil, nil
	}
	out := &Proguard{}
	sizes := map[*entry]int64{}
	if a.mapping != nil {
		uuid, n, err := p.mappingUUID(*a.mapping)
		if err != nil {
			return nil, err
		}
		out.UUID, sizes[a.mapping] = uuid, n
	}
	if a.rTxt != nil {
		n, err := p.measure(*a.rTxt, lim.rTxt)
		if err != nil {
			return nil, err
		}
		sizes[a.rTxt] = n
	}
	if a.manifest != nil {
		data, err := p.readAll(*a.manifest, lim.manifest)
		if err != nil {
			return nil, err
		}
		if isAXML(data) && a.mapping == nil && a.rTxt == nil {
			// A compiled manifest alone: an APK (or one unpacked), not a debug archive.
			p.compiledManifest = a.manifest.name
			return nil, nil
		}
		if err := parseManifest(data, out); err != nil {
			return nil, errs.Invalidf("%s is not a valid AndroidManifest.xml: %s", quote(a.manifest.name), err)
		}
		sizes[a.manifest] = int64(len(data))
	}
	// List the files in archive order, by base name as Zealot does.
	var files []*entry
	for _, e := range []*entry{a.mapping, a.rTxt, a.manifest} {
		if e != nil {
			files = append(files, e)
		}
	}
	slices.SortFunc(files, func(x, y *entry) int { return x.idx - y.idx })
	for _, e := range files {
		out.Files = append(out.Files, File{Name: path.Base(e.name), Size: sizes[e]})
	}
	return out, nil
}

// mappingUUID streams a mapping file and returns the UUIDv5 of its content in proguardNamespace
// (SHA-1 over the namespace's bytes and the content, with the version and variant bits set;
// RFC 9562 §5.5) and its size.
func (p *parser) mappingUUID(e entry) (string, int64, error) {
	rc, err := p.open(e, lim.mapping)
	if err != nil {
		return "", 0, err
	}
	defer rc.Close()
	h := sha1.New()
	h.Write(proguardNamespace[:])
	n, err := io.Copy(h, rc)
	if err != nil {
		return "", 0, ioErr(err, e.name, "is truncated")
	}
	return uuidV5(h.Sum(nil)), n, nil
}

// uuidV5 turns a SHA-1 sum into a lower-case dashed version-5 UUID.
func uuidV5(sum []byte) string {
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u, false)
}

// measure streams an entry to count its actual size.
func (p *parser) measure(e entry, max int64) (int64, error) {
	rc, err := p.open(e, max)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err != nil {
		return 0, ioErr(err, e.name, "is truncated")
	}
	return n, nil
}

// isAXML reports a compiled (binary XML) Android manifest: it starts with a RES_XML_TYPE chunk.
func isAXML(data []byte) bool {
	return len(data) >= 4 && data[0] == 0x03 && data[1] == 0x00 && data[2] == 0x08 && data[3] == 0x00
}

// parseManifest fills the package name and versions from a text AndroidManifest.xml's root
// <manifest> element. A compiled (binary AXML) manifest, as found inside an APK, is accepted
// beside a mapping or R.txt but not read: its values may need the APK's resource table to
// resolve, and the versions then come from the upload form.
func parseManifest(data []byte, out *Proguard) error {
	if isAXML(data) {
		return nil
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		t, err := d.Token()
		if err == io.EOF {
			return errors.New("no <manifest> element")
		}
		if err != nil {
			return err
		}
		se, ok := t.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != "manifest" {
			return errors.New("the root element is <" + se.Name.Local + ">, not <manifest>")
		}
		for _, at := range se.Attr {
			android := at.Name.Space == androidNS || at.Name.Space == "android"
			switch {
			case at.Name.Space == "" && at.Name.Local == "package":
				out.PackageName = strings.TrimSpace(at.Value)
			case android && at.Name.Local == "versionName":
				out.ReleaseVersion = strings.TrimSpace(at.Value)
			case android && at.Name.Local == "versionCode":
				out.BuildVersion = strings.TrimSpace(at.Value)
			}
		}
		return nil
	}
}
