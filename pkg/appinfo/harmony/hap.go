package harmony

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// moduleJSON is the part of a built HAP's module.json this package reads. In a built HAP the
// packing tool has merged the project's app.json5 into module.json as its "app" object, and has
// added the numeric resource ids (labelId, iconId) next to the "$string:name" references.
type moduleJSON struct {
	App    *moduleApp    `json:"app"`
	Module *moduleModule `json:"module"`
}

type moduleApp struct {
	BundleName        string      `json:"bundleName"`
	BundleType        string      `json:"bundleType"`
	Vendor            string      `json:"vendor"`
	VersionCode       json.Number `json:"versionCode"`
	VersionName       string      `json:"versionName"`
	MinAPIVersion     json.Number `json:"minAPIVersion"`
	TargetAPIVersion  json.Number `json:"targetAPIVersion"`
	APIReleaseType    string      `json:"apiReleaseType"`
	CompileSdkVersion string      `json:"compileSdkVersion"`
	CompileSdkType    string      `json:"compileSdkType"`
	Debug             bool        `json:"debug"`
	Label             string      `json:"label"`
	LabelID           json.Number `json:"labelId"`
	Icon              string      `json:"icon"`
	IconID            json.Number `json:"iconId"`
	Description       string      `json:"description"`
	DescriptionID     json.Number `json:"descriptionId"`
}

type moduleModule struct {
	Name               string          `json:"name"`
	Type               string          `json:"type"`
	MainElement        string          `json:"mainElement"`
	DeviceTypes        []string        `json:"deviceTypes"`
	RequestPermissions []modulePerm    `json:"requestPermissions"`
	Abilities          []moduleAbility `json:"abilities"`
}

type modulePerm struct {
	Name string `json:"name"`
}

type moduleAbility struct {
	Name    string      `json:"name"`
	Label   string      `json:"label"`
	LabelID json.Number `json:"labelId"`
	Icon    string      `json:"icon"`
	IconID  json.Number `json:"iconId"`
}

// packInfo is the part of pack.info this package reads: the packing tool writes one into every
// HAP (describing that module) and one at the root of an .app (describing all its modules).
type packInfo struct {
	Summary struct {
		App struct {
			BundleName string `json:"bundleName"`
			BundleType string `json:"bundleType"`
			Version    struct {
				Code json.Number `json:"code"`
				Name string      `json:"name"`
			} `json:"version"`
		} `json:"app"`
		Modules []packModule `json:"modules"`
	} `json:"summary"`
	Packages []packPackage `json:"packages"`
}

type packModule struct {
	DeviceType []string `json:"deviceType"`
	Distro     struct {
		ModuleName string `json:"moduleName"`
		ModuleType string `json:"moduleType"`
	} `json:"distro"`
	APIVersion struct {
		Compatible json.Number `json:"compatible"`
		Target     json.Number `json:"target"`
	} `json:"apiVersion"`
}

type packPackage struct {
	Name                string   `json:"name"`
	ModuleType          string   `json:"moduleType"`
	DeliveryWithInstall bool     `json:"deliveryWithInstall"`
	DeviceType          []string `json:"deviceType"`
}

// ParseHAP reads a HarmonyOS module package (.hap): module.json, resources.index for the label
// and icon, and pack.info when module.json lacks the app's identity. The package doc says how
// each field is derived.
func ParseHAP(a *zipread.Archive) (*appinfo.Info, error) {
	h, err := readHAP(a)
	if err != nil {
		return nil, err
	}
	info, err := h.info(appinfo.FormatHAP)
	if err != nil {
		return nil, err
	}
	info.Sizes = appinfo.ZipBreakdown(a, hapCut)
	return info, nil
}

// hap is an opened HAP: its archive and decoded metadata files.
type hap struct {
	a     *zipread.Archive
	m     moduleJSON
	pack  *packInfo // the HAP's own pack.info, nil when absent
	index *resIndex // nil when the HAP has no resources.index
}

// readHAP reads and decodes the metadata files of the HAP in a.
func readHAP(a *zipread.Archive) (*hap, error) {
	b, err := a.ReadName(moduleJSONName, MaxModuleJSONBytes)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errs.Invalidf("the HAP has no module.json (an FA-model config.json package is not supported)")
	}
	h := &hap{a: a}
	if err := decodeJSON(moduleJSONName, b, &h.m); err != nil {
		return nil, err
	}
	if h.m.Module == nil && h.m.App == nil {
		return nil, errs.Invalidf("module.json has neither an \"app\" nor a \"module\" object")
	}
	if b, err := a.ReadName(packInfoName, MaxPackInfoBytes); err != nil {
		return nil, err
	} else if b != nil {
		h.pack = &packInfo{}
		if err := decodeJSON(packInfoName, b, h.pack); err != nil {
			return nil, err
		}
	}
	if f := a.File(resourcesIndexName); f != nil {
		// Its header first: an index that is none is refused before it is inflated whole.
		head, err := a.ReadHead(f, resV1HeaderLen)
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(head, []byte("Restool")) {
			_, err := decodeResourceIndex(head)
			return nil, err
		}
	}
	if b, err := a.ReadName(resourcesIndexName, MaxResourcesIndexBytes); err != nil {
		return nil, err
	} else if b != nil {
		if h.index, err = decodeResourceIndex(b); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// info assembles the Info of the HAP.
func (h *hap) info(format appinfo.Format) (*appinfo.Info, error) {
	app := h.m.App
	if app == nil {
		app = &moduleApp{}
	}
	mod := h.m.Module
	if mod == nil {
		mod = &moduleModule{}
	}
	info := &appinfo.Info{Platform: appinfo.HarmonyOS, Format: format}

	info.BundleID = clean(app.BundleName)
	info.ReleaseVersion = clean(app.VersionName)
	code, codeField := app.VersionCode, "module.json app.versionCode"
	if h.pack != nil {
		pa := h.pack.Summary.App
		info.BundleID = first(info.BundleID, clean(pa.BundleName))
		info.ReleaseVersion = first(info.ReleaseVersion, clean(pa.Version.Name))
		if code == "" {
			code, codeField = pa.Version.Code, "pack.info summary.app.version.code"
		}
	}
	if info.BundleID == "" {
		return nil, errs.Invalidf("the HAP names no bundle: module.json has no app.bundleName and pack.info no summary.app.bundleName")
	}
	if !validBundleName(info.BundleID) {
		return nil, errs.Invalidf("%q is not a valid HarmonyOS bundle name (letters, digits, '_' and '.', starting with a letter, at most 128 bytes)", info.BundleID)
	}
	var err error
	if info.BuildVersion, err = versionCode(codeField, code); err != nil {
		return nil, err
	}
	info.MinOS = apiVersionText(app.MinAPIVersion)
	info.TargetSDK = apiVersionText(app.TargetAPIVersion)
	info.Device = joinList(mod.DeviceTypes, ",")
	if info.Device == "" && h.pack != nil && len(h.pack.Summary.Modules) > 0 {
		info.Device = joinList(h.pack.Summary.Modules[0].DeviceType, ",")
	}
	info.Publisher = clean(app.Vendor)
	info.Debuggable = app.Debug
	for _, p := range mod.RequestPermissions {
		if len(info.Permissions) == maxListItems {
			break
		}
		if s := clean(p.Name); s != "" && !contains(info.Permissions, s) {
			info.Permissions = append(info.Permissions, s)
		}
	}
	info.Architectures = h.architectures()

	if info.Name, err = h.label(); err != nil {
		return nil, err
	}
	if info.Name == "" {
		info.Name = info.BundleID
	}
	if info.Description, err = h.text(numberID(app.DescriptionID), app.Description); err != nil {
		return nil, err
	}
	if info.Icon, err = h.icon(); err != nil {
		return nil, err
	}
	info.SetProperty("BundleType", clean(app.BundleType))
	info.SetProperty("APIReleaseType", clean(app.APIReleaseType))
	info.SetProperty("CompileSdkVersion", clean(app.CompileSdkVersion))
	info.SetProperty("CompileSdkType", clean(app.CompileSdkType))
	info.SetProperty("Module", clean(mod.Name))
	info.SetProperty("ModuleType", clean(mod.Type))
	return info, nil
}

// mainAbility returns the ability the module starts (mainElement), else its first one.
func (h *hap) mainAbility() *moduleAbility {
	mod := h.m.Module
	if mod == nil || len(mod.Abilities) == 0 {
		return nil
	}
	for i := range mod.Abilities {
		if mod.Abilities[i].Name == mod.MainElement {
			return &mod.Abilities[i]
		}
	}
	return &mod.Abilities[0]
}

// label resolves the app's label (app.labelId, app.label), else its main ability's.
func (h *hap) label() (string, error) {
	app := h.m.App
	if app != nil {
		if s, err := h.text(numberID(app.LabelID), app.Label); s != "" || err != nil {
			return s, err
		}
	}
	if ab := h.mainAbility(); ab != nil {
		return h.text(numberID(ab.LabelID), ab.Label)
	}
	return "", nil
}

// text resolves a string resource: by id when id is not 0, else by the reference ref
// ("$string:name" or "$string:16777216"). A ref that is not a reference is the text itself
// (used when an id does not resolve). It returns "" when the index does not have the resource.
func (h *hap) text(id uint32, ref string) (string, error) {
	kind, name, refID, isRef := parseRef(ref)
	if isRef && kind != "string" {
		name, refID = "", 0 // a reference to something else is no text
	}
	if id == 0 {
		id = refID
	}
	if id != 0 || name != "" {
		vals, err := h.index.lookup(resTypeString, id, name)
		if s := pickString(vals); s != "" || err != nil {
			return s, err
		}
	}
	if !isRef {
		return clean(ref), nil
	}
	return "", nil
}

// pickString returns the value of the default configuration: base, else English, else the
// first in the index.
func pickString(vals []resValue) string {
	best, rank := "", 0
	for _, v := range vals {
		s := clean(v.value)
		if s == "" {
			continue
		}
		r := 1
		switch lang, ok := v.config.param(keyLanguage); {
		case len(v.config.params) == 0:
			r = 4
		case ok && (resKeyParam{val: lang}).text() == "en" && len(v.config.params) == 1:
			r = 3
		case ok && (resKeyParam{val: lang}).text() == "en":
			r = 2
		}
		if r > rank {
			best, rank = s, r
		}
	}
	return best
}

// parseRef splits a resource reference "$kind:name" or "$kind:id". isRef is false for text that
// is not a reference.
func parseRef(s string) (kind, name string, id uint32, isRef bool) {
	if !strings.HasPrefix(s, "$") {
		return "", "", 0, false
	}
	kind, name, ok := strings.Cut(s[1:], ":")
	if !ok || name == "" {
		return kind, "", 0, true
	}
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return kind, "", uint32(n), true
	}
	return kind, name, 0, true
}

// numberID returns a resource id given as a JSON number, 0 when absent or not an id.
func numberID(n json.Number) uint32 {
	v, err := strconv.ParseUint(string(n), 10, 32)
	if err != nil {
		return 0
	}
	return uint32(v)
}

// versionCode checks a version code (field names it), a non-negative 32-bit integer, and
// returns it as text.
func versionCode(field string, n json.Number) (string, error) {
	if n == "" {
		return "", nil
	}
	v, err := strconv.ParseUint(string(n), 10, 32)
	if err != nil {
		return "", errs.Invalidf("%s %q is not a non-negative 32-bit integer", field, clean(string(n)))
	}
	return strconv.FormatUint(v, 10), nil
}

// apiVersionText turns an API version number of module.json into the form DevEco Studio and
// Huawei's documentation write: n = (M×10000 + F×100 + S)×1000 + N is "M.F.S(N)", so 50000012
// is "5.0.0(12)" and 50100018 is "5.1.0(18)". A number under 1000 is a bare OpenHarmony API level
// and is written as is ("12"); one whose last three digits are 0 is written "M.F.S". Anything
// that is not a non-negative integer gives "".
func apiVersionText(n json.Number) string {
	v, err := strconv.ParseUint(string(n), 10, 32)
	switch {
	case err != nil || v == 0:
		return ""
	case v < 1000:
		return strconv.FormatUint(v, 10)
	}
	api, p := v%1000, v/1000
	s := fmt.Sprintf("%d.%d.%d", p/10000, p/100%100, p%100)
	if api != 0 {
		s += fmt.Sprintf("(%d)", api)
	}
	return s
}

// architectures lists the ABIs the HAP carries native libraries for (libs/<abi>/).
func (h *hap) architectures() []string {
	var out []string
	for _, f := range h.a.Files() {
		rest, ok := strings.CutPrefix(f.Name, "libs/")
		if !ok {
			continue
		}
		abi, _, ok := strings.Cut(rest, "/")
		if abi = clean(abi); !ok || abi == "" || contains(out, abi) {
			continue
		}
		out = append(out, abi)
		if len(out) == maxArchitectures {
			break
		}
	}
	sort.Strings(out)
	return out
}

// decodeJSON decodes a JSON metadata file, with an errs.Invalid error naming what is wrong.
func decodeJSON(name string, b []byte, v any) error {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a byte order mark is harmless
	err := json.Unmarshal(b, v)
	if err == nil {
		return nil
	}
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		hint := ""
		if strings.Contains(string(b), "//") || strings.Contains(string(b), "/*") {
			hint = "; a built package holds plain JSON, not the JSON5 of a project's source files"
		}
		return errs.Wrap(errs.Invalid, err, "%s is not valid JSON (at byte %d: %s%s)", name, se.Offset, se.Error(), hint)
	case errors.As(err, &te) && te.Field == "":
		return errs.Wrap(errs.Invalid, err, "%s is not a JSON object", name)
	case errors.As(err, &te):
		return errs.Wrap(errs.Invalid, err, "%s: %s is a JSON %s, not the expected %s", name, clean(te.Field), te.Value, jsonKind(te.Type.String()))
	}
	return errs.Wrap(errs.Invalid, err, "%s is not valid JSON", name)
}

func jsonKind(goType string) string {
	switch {
	case goType == "string":
		return "string"
	case goType == "json.Number" || strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "number"
	case goType == "bool":
		return "boolean"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	}
	return "object"
}

// validBundleName reports whether s is a bundle name HarmonyOS accepts: letters, digits, '_',
// '.' (and '-', seen in the wild), starting with a letter, at most 128 bytes.
func validBundleName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}
