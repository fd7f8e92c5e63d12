package windowstest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Entry is one file of a zip archive.
type Entry struct {
	Name  string
	Data  []byte
	Store bool // stored instead of deflated
	// Fill, when set, writes a large stored entry on the fly (Data is then ignored).
	Fill func(w io.Writer) error
}

// BuildZip returns a zip archive of the entries.
func BuildZip(entries ...Entry) []byte {
	var b bytes.Buffer
	if err := WriteZip(&b, entries...); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteZip streams a zip archive of the entries to w.
func WriteZip(w io.Writer, entries ...Entry) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
		if e.Store || e.Fill != nil {
			h.Method = zip.Store
		}
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if e.Fill != nil {
			err = e.Fill(fw)
		} else {
			_, err = fw.Write(e.Data)
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// MSIXOptions describes a synthetic MSIX package, following the AppxManifest schema
// (foundation/windows10 with the uap and rescap namespaces).
type MSIXOptions struct {
	Name                 string // Identity Name (default "Acme.FieldTool")
	Publisher            string // Identity Publisher (default "CN=Acme Labs, O=Acme Labs, C=US")
	Version              string // Identity Version (default "1.2.3.0")
	Arch                 string // ProcessorArchitecture (default "x64"; "-" for none)
	DisplayName          string // Properties DisplayName (default "Field Tool")
	PublisherDisplayName string // default "Acme Labs"
	Description          string
	// VisualName is the Application's uap:VisualElements DisplayName (default DisplayName).
	VisualName string
	// Logo is Properties/Logo (default `Assets\StoreLogo.png`); LogoFiles are the files shipped
	// for it (default scale-100, -150 and -200 variants of 50, 75 and 100 pixels).
	Logo      string
	LogoFiles []LogoFile
	// Families are the target device families (default Windows.Desktop 10.0.17763.0).
	Families     [][2]string
	Capabilities []string // default internetClient, rescap:runFullTrust
	// PayloadBytes adds App/data.bin of that many pseudo-random bytes, stored, before the
	// manifest entries (a large package).
	PayloadBytes int64
	// Manifest replaces AppxManifest.xml.
	Manifest []byte
	// Extra entries.
	Extra []Entry
}

// LogoFile is one file of a logo's variants.
type LogoFile struct {
	Name string // e.g. "Assets/StoreLogo.scale-200.png"
	Size int    // a square PNG of that size
	Data []byte // replaces the PNG
}

func (o *MSIXOptions) defaults() {
	o.Name = or(o.Name, "Acme.FieldTool")
	o.Publisher = or(o.Publisher, "CN=Acme Labs, O=Acme Labs, C=US")
	o.Version = or(o.Version, "1.2.3.0")
	o.Arch = or(o.Arch, "x64")
	o.DisplayName = or(o.DisplayName, "Field Tool")
	o.PublisherDisplayName = or(o.PublisherDisplayName, "Acme Labs")
	o.VisualName = or(o.VisualName, o.DisplayName)
	o.Logo = or(o.Logo, `Assets\StoreLogo.png`)
	if o.LogoFiles == nil {
		o.LogoFiles = []LogoFile{{"Assets/StoreLogo.scale-100.png", 50, nil}, {"Assets/StoreLogo.scale-150.png", 75, nil},
			{"Assets/StoreLogo.scale-200.png", 100, nil}, {"Assets/Square44x44Logo.scale-200.png", 88, nil}}
	}
	if o.Families == nil {
		o.Families = [][2]string{{"Windows.Desktop", "10.0.17763.0"}}
	}
	if o.Capabilities == nil {
		o.Capabilities = []string{"internetClient", "rescap:runFullTrust"}
	}
}

// AppxManifest returns the AppxManifest.xml o describes.
func AppxManifest(o MSIXOptions) []byte {
	o.defaults()
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>
<Package xmlns="http://schemas.microsoft.com/appx/manifest/foundation/windows10"
  xmlns:uap="http://schemas.microsoft.com/appx/manifest/uap/windows10"
  xmlns:rescap="http://schemas.microsoft.com/appx/manifest/foundation/windows10/restrictedcapabilities"
  IgnorableNamespaces="uap rescap">
`)
	arch := ""
	if o.Arch != "-" {
		arch = fmt.Sprintf(` ProcessorArchitecture="%s"`, o.Arch)
	}
	fmt.Fprintf(&b, "  <Identity Name=%q Publisher=%q Version=%q%s />\n", o.Name, xmlAttr(o.Publisher), o.Version, arch)
	fmt.Fprintf(&b, "  <Properties>\n    <DisplayName>%s</DisplayName>\n    <PublisherDisplayName>%s</PublisherDisplayName>\n    <Logo>%s</Logo>\n", o.DisplayName, o.PublisherDisplayName, o.Logo)
	if o.Description != "" {
		fmt.Fprintf(&b, "    <Description>%s</Description>\n", o.Description)
	}
	b.WriteString("  </Properties>\n  <Dependencies>\n")
	for _, f := range o.Families {
		fmt.Fprintf(&b, "    <TargetDeviceFamily Name=%q MinVersion=%q MaxVersionTested=\"10.0.22621.0\" />\n", f[0], f[1])
	}
	b.WriteString("  </Dependencies>\n  <Resources>\n    <Resource Language=\"en-us\" />\n  </Resources>\n")
	fmt.Fprintf(&b, `  <Applications>
    <Application Id="App" Executable="App\FieldTool.exe" EntryPoint="Windows.FullTrustApplication">
      <uap:VisualElements DisplayName=%q Description="Field Tool" BackgroundColor="transparent"
        Square150x150Logo="Assets\Square150x150Logo.png" Square44x44Logo="Assets\Square44x44Logo.png" />
    </Application>
  </Applications>
  <Capabilities>
`, o.VisualName)
	for _, c := range o.Capabilities {
		fmt.Fprintf(&b, "    <%s Name=%q />\n", capElem(c), strings.TrimPrefix(strings.TrimPrefix(c, "rescap:"), "uap:"))
	}
	b.WriteString("  </Capabilities>\n</Package>\n")
	return []byte(b.String())
}

func capElem(c string) string {
	switch {
	case strings.HasPrefix(c, "rescap:"):
		return "rescap:Capability"
	case strings.HasPrefix(c, "uap:"):
		return "uap:Capability"
	case c == "webcam" || c == "microphone" || c == "location":
		return "DeviceCapability"
	}
	return "Capability"
}

func xmlAttr(s string) string { return strings.ReplaceAll(s, `"`, "&quot;") }

// BuildMSIX returns the package o describes.
func BuildMSIX(o MSIXOptions) []byte {
	var b bytes.Buffer
	if err := WriteMSIX(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteMSIX streams the package o describes to w: the payload (App/FieldTool.exe, the large
// App/data.bin), the logos, then AppxManifest.xml, AppxBlockMap.xml, [Content_Types].xml and
// AppxSignature.p7x, in the order MakeAppx writes them.
func WriteMSIX(w io.Writer, o MSIXOptions) error {
	manifest := o.Manifest
	if manifest == nil {
		manifest = AppxManifest(o)
	}
	o.defaults()
	entries := []Entry{{Name: "App/FieldTool.exe", Data: BuildPE(PEOptions{Version: DefaultVersion("Field Tool", "1.2.3.0")})}}
	if o.PayloadBytes > 0 {
		n := o.PayloadBytes
		entries = append(entries, Entry{Name: "App/data.bin", Fill: func(w io.Writer) error { return writeRandom(w, n, 0xda7a) }})
	}
	var blockMap strings.Builder
	blockMap.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<BlockMap xmlns="http://schemas.microsoft.com/appx/2010/blockmap" HashMethod="http://www.w3.org/2001/04/xmlenc#sha256">` + "\n")
	for _, l := range o.LogoFiles {
		data := l.Data
		if data == nil {
			data = PNGImage(l.Size, l.Size)
		}
		name := (&url.URL{Path: l.Name}).EscapedPath()
		entries = append(entries, Entry{Name: name, Data: data, Store: true})
		fmt.Fprintf(&blockMap, "  <File Name=%q Size=\"%d\" LfhSize=\"%d\"><Block Hash=\"AAAA\" /></File>\n", strings.ReplaceAll(l.Name, "/", `\`), len(data), 30+len(name))
	}
	blockMap.WriteString("</BlockMap>\n")
	entries = append(entries, o.Extra...)
	entries = append(entries,
		Entry{Name: "AppxManifest.xml", Data: manifest},
		Entry{Name: "AppxBlockMap.xml", Data: []byte(blockMap.String())},
		Entry{Name: "[Content_Types].xml", Data: []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="png" ContentType="image/png"/><Default Extension="exe" ContentType="application/x-msdownload"/><Override PartName="/AppxManifest.xml" ContentType="application/vnd.ms-appx.manifest+xml"/><Override PartName="/AppxBlockMap.xml" ContentType="application/vnd.ms-appx.blockmap+xml"/><Override PartName="/AppxSignature.p7x" ContentType="application/vnd.ms-appx.signature"/></Types>`)},
		Entry{Name: "AppxSignature.p7x", Data: append([]byte("PKCX"), bytes.Repeat([]byte{0x30}, 60)...), Store: true},
	)
	return WriteZip(w, entries...)
}

// BundleOptions describes a synthetic MSIX bundle: one application package per architecture
// (the first is the main one) and a resource package.
type BundleOptions struct {
	App   MSIXOptions // the packages' identity and content
	Archs []string    // default x64, arm64
	// Deflate compresses the packages inside the bundle (bundles store them).
	Deflate bool
	// Inner replaces the main package's bytes (hostile tests).
	Inner []byte
	// Manifest replaces AppxBundleManifest.xml.
	Manifest []byte
}

// BuildMSIXBundle returns the bundle o describes.
func BuildMSIXBundle(o BundleOptions) []byte {
	app := o.App
	app.defaults()
	archs := o.Archs
	if archs == nil {
		archs = []string{"x64", "arm64"}
	}
	var entries []Entry
	var pkgs strings.Builder
	for i, arch := range archs {
		p := app
		p.Arch = arch
		data := BuildMSIX(p)
		if i == 0 && o.Inner != nil {
			data = o.Inner
		}
		name := fmt.Sprintf("FieldTool_%s_%s.msix", app.Version, arch)
		entries = append(entries, Entry{Name: name, Data: data, Store: !o.Deflate})
		fmt.Fprintf(&pkgs, `    <Package Type="application" Version=%q Architecture=%q FileName=%q Offset="0" Size="%d">
      <Resources><Resource Language="en-us" /></Resources>
      <b4:Dependencies><b4:TargetDeviceFamily Name="Windows.Desktop" MinVersion="10.0.17763.0" MaxVersionTested="10.0.22621.0" /></b4:Dependencies>
    </Package>
`, app.Version, arch, name, len(data))
	}
	res := app
	res.Arch = "neutral"
	resName := fmt.Sprintf("FieldTool_%s_scale-200.msix", app.Version)
	entries = append(entries, Entry{Name: resName, Data: BuildMSIX(res), Store: true})
	fmt.Fprintf(&pkgs, `    <Package Type="resource" Version=%q ResourceId="split.scale-200" FileName=%q Offset="0" Size="1">
      <Resources><Resource Scale="200" /></Resources>
    </Package>
`, app.Version, resName)
	manifest := o.Manifest
	if manifest == nil {
		manifest = []byte(fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<Bundle xmlns="http://schemas.microsoft.com/appx/2013/bundle" xmlns:b4="http://schemas.microsoft.com/appx/2018/bundle" SchemaVersion="4.0" IgnorableNamespaces="b4">
  <Identity Name=%q Publisher=%q Version=%q />
  <Packages>
%s  </Packages>
</Bundle>
`, app.Name, xmlAttr(app.Publisher), app.Version, pkgs.String()))
	}
	entries = append(entries,
		Entry{Name: "AppxMetadata/AppxBundleManifest.xml", Data: manifest},
		Entry{Name: "AppxBlockMap.xml", Data: []byte(`<?xml version="1.0" encoding="UTF-8"?><BlockMap xmlns="http://schemas.microsoft.com/appx/2010/blockmap"/>`)},
		Entry{Name: "[Content_Types].xml", Data: []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="msix" ContentType="application/vnd.ms-appx"/></Types>`)},
		Entry{Name: "AppxSignature.p7x", Data: []byte("PKCX0000"), Store: true},
	)
	return BuildZip(entries...)
}
