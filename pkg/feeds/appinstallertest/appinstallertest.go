// Package appinstallertest reads an .appinstaller file the way a test should: token by token,
// independently of the renderer in pkg/feeds, checking each element and attribute against
// Microsoft's documented App Installer schema (learn.microsoft.com, "App Installer file
// (.appinstaller) schema reference": AppInstaller, MainPackage, MainBundle, UpdateSettings,
// OnLaunch, AutomaticBackgroundTask), and returns what it says.
package appinstallertest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Namespaces are the App Installer schema's namespaces, oldest first.
var Namespaces = []string{
	"http://schemas.microsoft.com/appx/appinstaller/2017",
	"http://schemas.microsoft.com/appx/appinstaller/2017/2",
	"http://schemas.microsoft.com/appx/appinstaller/2018",
	"http://schemas.microsoft.com/appx/appinstaller/2021",
}

// Package is a MainPackage or MainBundle.
type Package struct {
	Bundle                                               bool
	Name, Publisher, Version, ProcessorArchitecture, URI string
}

// File is what an .appinstaller file says.
type File struct {
	Namespace, Version, URI string
	Main                    Package
	// OnLaunch is nil when the file has no UpdateSettings/OnLaunch.
	OnLaunch *struct {
		Hours                              int
		ShowPrompt, UpdateBlocksActivation bool
	}
	AutomaticBackgroundTask bool
}

var (
	quad      = regexp.MustCompile(`^(0|[1-9][0-9]{0,4})(\.(0|[1-9][0-9]{0,4})){3}$`)
	nameRe    = regexp.MustCompile(`^[A-Za-z0-9.-]{3,50}$`)
	dnPart    = `(CN|L|O|OU|E|C|S|STREET|T|G|I|SN|DC|SERIALNUMBER|(OID\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))+))=(([^,+="<>#;])+|".*")`
	dnRe      = regexp.MustCompile(`^` + dnPart + `(, ` + dnPart + `)*$`)
	archs     = []string{"x86", "x64", "arm", "arm64", "neutral"}
	booleans  = map[string]bool{"true": true, "false": false}
	maxURILen = 2084
)

// Parse reads an .appinstaller file and checks it against the schema.
func Parse(body []byte) (*File, error) {
	if !bytes.HasPrefix(body, []byte(`<?xml version="1.0" encoding="utf-8"?>`)) && !bytes.HasPrefix(body, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		return nil, fmt.Errorf("no UTF-8 XML declaration")
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	var f File
	root, err := nextStart(d)
	if err != nil {
		return nil, fmt.Errorf("no root element: %v", err)
	}
	if root.Name.Local != "AppInstaller" || !slices.Contains(Namespaces, root.Name.Space) {
		return nil, fmt.Errorf("root is {%s}%s, not AppInstaller in an App Installer namespace", root.Name.Space, root.Name.Local)
	}
	f.Namespace = root.Name.Space
	attrs, err := attributes(root, []string{"Version", "Uri"}, nil)
	if err != nil {
		return nil, err
	}
	f.Version, f.URI = attrs["Version"], attrs["Uri"]
	if !validQuad(f.Version) {
		return nil, fmt.Errorf("AppInstaller Version %q is not a quad version", f.Version)
	}
	if err := checkURI("AppInstaller Uri", f.URI); err != nil {
		return nil, err
	}
	order := 0 // 1: main seen, 2: UpdateSettings seen
	for {
		el, err := nextStart(d)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if el.Name.Space != f.Namespace {
			return nil, fmt.Errorf("element {%s}%s is not in the file's namespace", el.Name.Space, el.Name.Local)
		}
		switch el.Name.Local {
		case "MainPackage", "MainBundle":
			if order != 0 {
				return nil, fmt.Errorf("%s after another main element or UpdateSettings", el.Name.Local)
			}
			order = 1
			bundle := el.Name.Local == "MainBundle"
			optional := []string{"ResourceId"}
			if !bundle {
				optional = append(optional, "ProcessorArchitecture")
			}
			a, err := attributes(el, []string{"Name", "Publisher", "Version", "Uri"}, optional)
			if err != nil {
				return nil, err
			}
			p := Package{Bundle: bundle, Name: a["Name"], Publisher: a["Publisher"], Version: a["Version"], ProcessorArchitecture: a["ProcessorArchitecture"], URI: a["Uri"]}
			switch {
			case !nameRe.MatchString(p.Name):
				return nil, fmt.Errorf("%s Name %q: 3 to 50 letters, digits, periods and dashes", el.Name.Local, p.Name)
			case len(p.Publisher) > 8192 || !dnRe.MatchString(p.Publisher):
				return nil, fmt.Errorf("%s Publisher %q is not a distinguished name", el.Name.Local, p.Publisher)
			case !validQuad(p.Version):
				return nil, fmt.Errorf("%s Version %q is not a quad version", el.Name.Local, p.Version)
			case p.ProcessorArchitecture != "" && !slices.Contains(archs, p.ProcessorArchitecture):
				return nil, fmt.Errorf("MainPackage ProcessorArchitecture %q is not one of %v", p.ProcessorArchitecture, archs)
			}
			if err := checkURI(el.Name.Local+" Uri", p.URI); err != nil {
				return nil, err
			}
			f.Main = p
			if err := d.Skip(); err != nil {
				return nil, err
			}
		case "UpdateSettings":
			if order != 1 {
				return nil, fmt.Errorf("UpdateSettings before the main package, or twice")
			}
			order = 2
			if err := updateSettings(d, &f); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unexpected element %s", el.Name.Local)
		}
	}
	if order == 0 {
		return nil, fmt.Errorf("no MainPackage or MainBundle")
	}
	return &f, nil
}

func updateSettings(d *xml.Decoder, f *File) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("text in UpdateSettings")
			}
		case xml.StartElement:
			switch t.Name.Local {
			case "OnLaunch":
				a, err := attributes(t, nil, []string{"HoursBetweenUpdateChecks", "ShowPrompt", "UpdateBlocksActivation"})
				if err != nil {
					return err
				}
				f.OnLaunch = &struct {
					Hours                              int
					ShowPrompt, UpdateBlocksActivation bool
				}{Hours: 24}
				if h, ok := a["HoursBetweenUpdateChecks"]; ok {
					n, err := strconv.Atoi(h)
					if err != nil || n < 0 || n > 255 {
						return fmt.Errorf("HoursBetweenUpdateChecks %q is not 0 to 255", h)
					}
					f.OnLaunch.Hours = n
				}
				for name, dst := range map[string]*bool{"ShowPrompt": &f.OnLaunch.ShowPrompt, "UpdateBlocksActivation": &f.OnLaunch.UpdateBlocksActivation} {
					if v, ok := a[name]; ok {
						b, isBool := booleans[v]
						if !isBool {
							return fmt.Errorf("%s %q is not a boolean", name, v)
						}
						*dst = b
					}
				}
				if f.OnLaunch.UpdateBlocksActivation && !f.OnLaunch.ShowPrompt {
					return fmt.Errorf("UpdateBlocksActivation without ShowPrompt")
				}
			case "AutomaticBackgroundTask":
				if len(t.Attr) > 0 {
					return fmt.Errorf("AutomaticBackgroundTask takes no attributes")
				}
				f.AutomaticBackgroundTask = true
			case "ForceUpdateFromAnyVersion":
			default:
				return fmt.Errorf("unexpected element %s in UpdateSettings", t.Name.Local)
			}
			if err := d.Skip(); err != nil {
				return err
			}
		}
	}
}

// nextStart returns the next start element at this level (io.EOF at the end of the document or
// of the enclosing element).
func nextStart(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.EndElement:
			return xml.StartElement{}, io.EOF
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return xml.StartElement{}, fmt.Errorf("unexpected text %q", strings.TrimSpace(string(t)))
			}
		}
	}
}

// attributes returns an element's attributes by name: every required one present, none that is
// neither required nor optional (namespace declarations aside).
func attributes(el xml.StartElement, required, optional []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range el.Attr {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
			continue
		}
		if !slices.Contains(required, a.Name.Local) && !slices.Contains(optional, a.Name.Local) {
			return nil, fmt.Errorf("%s has an unknown attribute %s", el.Name.Local, a.Name.Local)
		}
		out[a.Name.Local] = a.Value
	}
	for _, r := range required {
		if _, ok := out[r]; !ok {
			return nil, fmt.Errorf("%s has no %s", el.Name.Local, r)
		}
	}
	return out, nil
}

func validQuad(v string) bool {
	if !quad.MatchString(v) {
		return false
	}
	for _, p := range strings.Split(v, ".") {
		if n, _ := strconv.Atoi(p); n > 65535 {
			return false
		}
	}
	return true
}

// checkURI checks a web URI as the schema takes it: absolute http(s), at most 2084 characters,
// at most one query key/value pair ("query strings with multiple key/value pairs are currently
// not supported").
func checkURI(what, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(s) > maxURILen {
		return fmt.Errorf("%s %q is not an absolute web URI of at most %d characters", what, s, maxURILen)
	}
	if q := u.Query(); len(q) > 1 {
		return fmt.Errorf("%s %q has %d query parameters; App Installer takes at most one", what, s, len(q))
	}
	return nil
}
