// Package harmonytest builds synthetic HarmonyOS packages for tests, end-to-end tests and
// benchmarks: a HAP laid out as the packing tool writes it (stored module.json, pack.info,
// resources.index in either restool layout, resources/base/media/*), an .app holding a stored
// entry HAP, and streaming writers that make packages of any size without holding them in
// memory (incompressible native-library filler before the metadata, as in a real build).
package harmonytest

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// Resource ids the builders give, in the order restool would.
const (
	IDAppName      = 0x01000000
	IDAppIcon      = 0x01000001
	IDAbilityLabel = 0x01000002
	IDLayered      = 0x01000003
	IDForeground   = 0x01000004
	IDBackground   = 0x01000005
	IDDescription  = 0x01000006
)

// Entry is one file of a synthetic archive; a name ending in "/" is a folder.
type Entry struct {
	Name string
	Data []byte
	// Deflate compresses the entry; by default it is stored, as the packing tool stores
	// module.json, resources.index and media files.
	Deflate bool
}

// HAPOptions describes a synthetic HAP. Zero values get working defaults.
type HAPOptions struct {
	BundleName  string // app.bundleName, "com.example.demo"
	VersionName string // app.versionName, "1.0.0"
	VersionCode int64  // app.versionCode, 1000000; -1 omits it
	// MinAPIVersion and TargetAPIVersion are the encoded API versions, 50000012 ("5.0.0(12)").
	MinAPIVersion, TargetAPIVersion int64
	Vendor                          string   // app.vendor, "example"
	Debug                           bool     // app.debug
	DeviceTypes                     []string // module.deviceTypes, ["phone", "tablet"]
	Permissions                     []string // module.requestPermissions names
	ModuleName                      string   // module.name, "entry"
	ModuleType                      string   // module.type, "entry"
	Label                           string   // the app_name string in base, "Demo"
	// Labels are app_name in further languages ("zh" → "演示"), each its own configuration.
	Labels       map[string]string
	AbilityLabel string // the EntryAbility_label string, "Demo Ability"
	Description  string // app.description's string, omitted when empty
	// ByName writes module.json without the numeric ids (labelId, iconId), so resources are
	// found by name and type.
	ByName bool
	// IconSize is the side of resources/base/media/app_icon.png (default 64); -1 writes none.
	IconSize int
	// IconDensities adds app_icon.png in further density folders (dpi → side in pixels).
	IconDensities map[uint32]int
	// Layered makes app.icon the layered image (foreground and background PNGs of IconSize)
	// instead of app_icon.png; the ability icon is layered in any case.
	Layered bool
	IndexV2 bool // write resources.index in restool 6's layout
	NoIndex bool // write no resources.index
	// App and Module add or override keys of module.json's objects (a nil value deletes one).
	App, Module map[string]any
	// RawModuleJSON, RawPackInfo and RawIndex replace the generated files when set.
	RawModuleJSON, RawPackInfo, RawIndex []byte
	// NoPackInfo leaves pack.info out.
	NoPackInfo bool
	// Architectures add libs/<abi>/libentry.so for each ABI.
	Architectures []string
	// FillerBytes adds that many incompressible bytes as stored native libraries of at most
	// 16 MiB each (libs/arm64-v8a/libfillerNN.so), before the metadata, as in a real build.
	FillerBytes int64
	// Extra entries are written after the others.
	Extra []Entry
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (o *HAPOptions) defaults() {
	o.BundleName = or(o.BundleName, "com.example.demo")
	o.VersionName = or(o.VersionName, "1.0.0")
	if o.VersionCode == 0 {
		o.VersionCode = 1000000
	}
	if o.MinAPIVersion == 0 {
		o.MinAPIVersion = 50000012
	}
	if o.TargetAPIVersion == 0 {
		o.TargetAPIVersion = 50000012
	}
	o.Vendor = or(o.Vendor, "example")
	if o.DeviceTypes == nil {
		o.DeviceTypes = []string{"phone", "tablet"}
	}
	o.ModuleName = or(o.ModuleName, "entry")
	o.ModuleType = or(o.ModuleType, "entry")
	o.Label = or(o.Label, "Demo")
	o.AbilityLabel = or(o.AbilityLabel, "Demo Ability")
	if o.IconSize == 0 {
		o.IconSize = 64
	}
}

// BuildHAP returns a synthetic HAP; it panics on options it cannot encode.
func BuildHAP(o HAPOptions) []byte {
	var b bytes.Buffer
	if err := WriteHAP(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteHAP streams a synthetic HAP to w.
func WriteHAP(w io.Writer, o HAPOptions) error {
	o.defaults()
	zw := zip.NewWriter(w)
	if err := writeFiller(zw, "libs/arm64-v8a/", o.FillerBytes); err != nil {
		return err
	}
	entries, err := HAPEntries(o)
	if err != nil {
		return err
	}
	if err := writeEntries(zw, entries); err != nil {
		return err
	}
	return zw.Close()
}

// HAPEntries returns the files of the HAP o describes (without filler), in archive order.
func HAPEntries(o HAPOptions) ([]Entry, error) {
	o.defaults()
	mod := o.ModuleName
	media := mod + "/resources/base/media/"
	var (
		entries []Entry
		res     []IndexResource
		configs = []IndexConfig{{}}
	)
	str := func(id uint32, name, base string, langs map[string]string) {
		r := IndexResource{ID: id, Type: TypeString, Name: name, Values: []IndexValue{{Config: 0, Value: base}}}
		for _, lang := range sortedKeys(langs) {
			configs = append(configs, IndexConfig{Language: lang})
			r.Values = append(r.Values, IndexValue{Config: len(configs) - 1, Value: langs[lang]})
		}
		res = append(res, r)
	}
	str(IDAppName, "app_name", o.Label, o.Labels)
	str(IDAbilityLabel, "EntryAbility_label", o.AbilityLabel, nil)
	if o.Description != "" {
		str(IDDescription, "app_description", o.Description, nil)
	}
	if o.IconSize > 0 {
		icon := IndexResource{ID: IDAppIcon, Type: TypeMedia, Name: "app_icon",
			Values: []IndexValue{{Config: 0, Value: media + "app_icon.png"}}}
		entries = append(entries, Entry{Name: "resources/base/media/app_icon.png", Data: PNG(o.IconSize, o.IconSize, color.NRGBA{R: 200, G: 40, B: 40, A: 255})})
		for _, dpi := range sortedKeys(o.IconDensities) {
			folder := densityFolder(dpi)
			configs = append(configs, IndexConfig{Density: dpi})
			icon.Values = append(icon.Values, IndexValue{Config: len(configs) - 1, Value: mod + "/resources/" + folder + "/media/app_icon.png"})
			side := o.IconDensities[dpi]
			entries = append(entries, Entry{Name: "resources/" + folder + "/media/app_icon.png", Data: PNG(side, side, color.NRGBA{R: 40, G: 200, B: 40, A: 255})})
		}
		res = append(res, icon,
			IndexResource{ID: IDLayered, Type: TypeMedia, Name: "layered_image", Values: []IndexValue{{Value: media + "layered_image.json"}}},
			IndexResource{ID: IDForeground, Type: TypeMedia, Name: "foreground", Values: []IndexValue{{Value: media + "foreground.png"}}},
			IndexResource{ID: IDBackground, Type: TypeMedia, Name: "background", Values: []IndexValue{{Value: media + "background.png"}}})
		entries = append(entries,
			Entry{Name: "resources/base/media/layered_image.json", Data: []byte(fmt.Sprintf(`{"layered-image":{"background":"$media:%d","foreground":"$media:%d"}}`, IDBackground, IDForeground))},
			Entry{Name: "resources/base/media/foreground.png", Data: ForegroundPNG(o.IconSize)},
			Entry{Name: "resources/base/media/background.png", Data: PNG(o.IconSize, o.IconSize, color.NRGBA{R: 20, G: 20, B: 220, A: 255})})
	}

	app := map[string]any{
		"bundleName":        o.BundleName,
		"bundleType":        "app",
		"vendor":            o.Vendor,
		"versionCode":       o.VersionCode,
		"versionName":       o.VersionName,
		"minAPIVersion":     o.MinAPIVersion,
		"targetAPIVersion":  o.TargetAPIVersion,
		"apiReleaseType":    "Release",
		"compileSdkVersion": "5.0.0.71",
		"compileSdkType":    "HarmonyOS",
		"label":             "$string:app_name",
		"labelId":           IDAppName,
		"icon":              "$media:app_icon",
		"iconId":            IDAppIcon,
	}
	if o.VersionCode < 0 {
		delete(app, "versionCode")
	}
	if o.Debug {
		app["debug"] = true
	}
	if o.Layered {
		app["icon"], app["iconId"] = "$media:layered_image", IDLayered
	}
	if o.Description != "" {
		app["description"], app["descriptionId"] = "$string:app_description", IDDescription
	}
	ability := map[string]any{
		"name": "EntryAbility", "srcEntry": "./ets/entryability/EntryAbility.ets", "exported": true,
		"label": "$string:EntryAbility_label", "labelId": IDAbilityLabel,
		"icon": "$media:layered_image", "iconId": IDLayered,
		"skills": []any{map[string]any{"entities": []string{"entity.system.home"}, "actions": []string{"action.system.home"}}},
	}
	module := map[string]any{
		"name": mod, "type": o.ModuleType, "mainElement": "EntryAbility", "deviceTypes": o.DeviceTypes,
		"deliveryWithInstall": true, "installationFree": false, "virtualMachine": "ark12.0.2.0",
		"compileMode": "esmodule", "pages": "$profile:main_pages", "abilities": []any{ability},
	}
	if len(o.Permissions) > 0 {
		var perms []any
		for _, p := range o.Permissions {
			perms = append(perms, map[string]any{"name": p})
		}
		module["requestPermissions"] = perms
	}
	if o.ByName {
		for _, m := range []map[string]any{app, ability} {
			for k := range m {
				if strings.HasSuffix(k, "Id") {
					delete(m, k)
				}
			}
		}
	}
	merge(app, o.App)
	merge(module, o.Module)
	moduleJSON := o.RawModuleJSON
	if moduleJSON == nil {
		moduleJSON = mustJSON(map[string]any{"app": app, "module": module})
	}
	head := []Entry{{Name: "module.json", Data: moduleJSON}}
	if !o.NoPackInfo {
		pack := o.RawPackInfo
		if pack == nil {
			pack = mustJSON(map[string]any{
				"summary": map[string]any{
					"app": map[string]any{"bundleName": o.BundleName, "bundleType": "app",
						"version": map[string]any{"code": o.VersionCode, "name": o.VersionName}},
					"modules": []any{map[string]any{"mainAbility": "EntryAbility", "deviceType": o.DeviceTypes,
						"distro":     map[string]any{"moduleType": o.ModuleType, "moduleName": mod, "deliveryWithInstall": true},
						"apiVersion": map[string]any{"compatible": o.MinAPIVersion % 1000, "target": o.TargetAPIVersion % 1000}}},
				},
				"packages": []any{map[string]any{"name": mod + "-default", "moduleType": o.ModuleType,
					"deliveryWithInstall": true, "deviceType": o.DeviceTypes}},
			})
		}
		head = append(head, Entry{Name: "pack.info", Data: pack})
	}
	if !o.NoIndex {
		index := o.RawIndex
		if index == nil {
			index = BuildResourcesIndex(IndexOptions{V2: o.IndexV2, Configs: configs, Resources: res})
		}
		head = append(head, Entry{Name: "resources.index", Data: index})
	}
	entries = append(head, entries...)
	for _, abi := range o.Architectures {
		entries = append(entries, Entry{Name: "libs/" + abi + "/libentry.so", Data: []byte("\x7fELF")})
	}
	entries = append(entries, Entry{Name: "resources/base/profile/main_pages.json", Data: []byte(`{"src":["pages/Index"]}`)},
		Entry{Name: "ets/modules.abc", Data: []byte("PANDA\x00\x00\x00")})
	return append(entries, o.Extra...), nil
}

// AppOptions describes a synthetic .app: pack.info and a stored entry HAP.
type AppOptions struct {
	// HAP is the entry HAP (its FillerBytes make the .app large).
	HAP HAPOptions
	// EntryName is the entry HAP's name without ".hap", "entry-default".
	EntryName string
	// RawHAP replaces the entry HAP's bytes when set.
	RawHAP []byte
	// RawPackInfo replaces the generated pack.info when set.
	RawPackInfo []byte
	// DeflateHAP compresses the entry HAP (the packing tool stores it).
	DeflateHAP bool
	// Extra entries are written after the others.
	Extra []Entry
}

// BuildApp returns a synthetic .app; it panics on options it cannot encode.
func BuildApp(o AppOptions) []byte {
	var b bytes.Buffer
	if err := WriteApp(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteApp streams a synthetic .app to w, the entry HAP written straight into its stored entry.
func WriteApp(w io.Writer, o AppOptions) error {
	h := o.HAP
	h.defaults()
	name := or(o.EntryName, h.ModuleName+"-default")
	pack := o.RawPackInfo
	if pack == nil {
		pack = mustJSON(map[string]any{
			"summary": map[string]any{
				"app": map[string]any{"bundleName": h.BundleName, "bundleType": "app",
					"version": map[string]any{"code": h.VersionCode, "name": h.VersionName}},
				"modules": []any{map[string]any{"mainAbility": "EntryAbility", "deviceType": h.DeviceTypes,
					"distro": map[string]any{"moduleType": h.ModuleType, "moduleName": h.ModuleName, "deliveryWithInstall": true}}},
			},
			"packages": []any{map[string]any{"name": name, "moduleType": h.ModuleType,
				"deliveryWithInstall": true, "deviceType": h.DeviceTypes}},
		})
	}
	zw := zip.NewWriter(w)
	method := zip.Store
	if o.DeflateHAP {
		method = zip.Deflate
	}
	hw, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".hap", Method: method, Modified: stamp})
	if err != nil {
		return err
	}
	if o.RawHAP != nil {
		_, err = hw.Write(o.RawHAP)
	} else {
		err = WriteHAP(hw, h)
	}
	if err != nil {
		return err
	}
	if err := writeEntries(zw, append([]Entry{{Name: "pack.info", Data: pack}}, o.Extra...)); err != nil {
		return err
	}
	return zw.Close()
}

// BuildZip returns a zip of the entries in order.
func BuildZip(entries ...Entry) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	if err := writeEntries(zw, entries); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

var stamp = time.Date(2024, 7, 30, 9, 48, 0, 0, time.UTC)

func writeEntries(zw *zip.Writer, entries []Entry) error {
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Store, Modified: stamp}
		if e.Deflate && !strings.HasSuffix(e.Name, "/") {
			h.Method = zip.Deflate
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(e.Data); err != nil {
			return err
		}
	}
	return nil
}

// writeFiller writes n incompressible, deterministic bytes as stored native libraries of at
// most 16 MiB under dir.
func writeFiller(zw *zip.Writer, dir string, n int64) error {
	const part = 16 << 20
	rng := rand.NewChaCha8([32]byte{'h', 'a', 'r', 'm', 'o', 'n', 'y'})
	chunk := make([]byte, 1<<20)
	for i := 0; n > 0; i++ {
		size := min(n, part)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%slibfiller%02d.so", dir, i), Method: zip.Store, Modified: stamp})
		if err != nil {
			return err
		}
		for left := size; left > 0; {
			c := chunk[:min(left, int64(len(chunk)))]
			_, _ = rng.Read(c)
			if _, err := w.Write(c); err != nil {
				return err
			}
			left -= int64(len(c))
		}
		n -= size
	}
	return nil
}

// PNG returns a w×h PNG filled with c.
func PNG(w, h int, c color.NRGBA) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// ForegroundPNG returns the foreground layer of the synthetic layered icon: a size×size
// transparent image with an opaque white square in its middle half.
func ForegroundPNG(size int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := size / 4; y < size*3/4; y++ {
		for x := size / 4; x < size*3/4; x++ {
			img.SetNRGBA(x, y, color.NRGBA{R: 255, G: 255, B: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func densityFolder(dpi uint32) string {
	switch dpi {
	case 120:
		return "sdpi"
	case 160:
		return "mdpi"
	case 240:
		return "ldpi"
	case 320:
		return "xldpi"
	case 480:
		return "xxldpi"
	case 640:
		return "xxxldpi"
	}
	return fmt.Sprintf("dpi%d", dpi)
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
		} else {
			dst[k] = v
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func sortedKeys[K ~string | ~uint32, V any](m map[K]V) []K {
	var keys []K
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}
