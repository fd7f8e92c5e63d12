package android

// Android App Bundles (.aab). The base module's manifest (base/manifest/AndroidManifest.xml) is an
// aapt2 XmlNode and its resources (base/resources.pb) an aapt2 ResourceTable, both protobuf
// messages of frameworks/base tools/aapt2 Resources.proto and Configuration.proto (package
// aapt.pb). They are read with protowire, field by field: only the fields named in the comments
// below are used, everything else is skipped, and nothing is materialised beyond what a lookup
// needs.

import (
	"errors"
	"strings"

	ab "github.com/shogo82148/androidbinary"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// parseAAB reads an AAB: its base module's protobuf manifest, and base/resources.pb (when
// present) to resolve the label, versionName and launcher icon references.
func parseAAB(a *zipread.Archive) (*appinfo.Info, error) {
	f := a.File("base/manifest/AndroidManifest.xml")
	if f == nil {
		return nil, errs.Invalidf("the app bundle has no base/manifest/AndroidManifest.xml")
	}
	manifest, err := a.ReadFile(f, MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	m, err := decodeAABManifest(manifest)
	if err != nil {
		return nil, err
	}
	var res androidResources
	if f := a.File("base/resources.pb"); f != nil {
		b, err := a.ReadFile(f, MaxResourcesBytes)
		if err != nil {
			return nil, err
		}
		res = newAABResources(b)
	}
	info, err := androidInfo(appinfo.FormatAAB, m, res)
	if err != nil {
		return nil, err
	}
	if info.Icon, err = androidIcon(a, "base/", m, res); err != nil {
		return nil, err
	}
	info.Architectures = androidABIs(a, true)
	info.Sizes = appinfo.ZipBreakdown(a, aabCut(a))
	return info, nil
}

// errAABWire reports malformed protobuf wire data; callers name the document.
var errAABWire = errors.New("malformed protobuf")

// aabFields calls fn for each field of protobuf message b: v is a length-delimited field's
// payload, x a varint or fixed-size field's value (groups are skipped).
func aabFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errAABWire
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errAABWire
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// aabString returns the last string field num of message b, at most max bytes.
func aabString(b []byte, num protowire.Number, max int) (s string, found bool, err error) {
	err = aabFields(b, func(n protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if n == num && typ == protowire.BytesType {
			s, found = string(v[:min(len(v), max)]), true
		}
		return nil
	})
	return s, found, err
}

// decodeAABManifest decodes base/manifest/AndroidManifest.xml, an XmlNode whose element (field 1)
// is <manifest>.
func decodeAABManifest(b []byte) (*androidManifest, error) {
	m := &androidManifest{}
	err := aabFields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num == 1 && typ == protowire.BytesType && !m.rootSeen {
			return aabElement(m, v, 1)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, errs.Wrap(errs.Invalid, err, "base/manifest/AndroidManifest.xml is not a valid protobuf XML document")
	case !m.rootSeen:
		return nil, errs.Invalidf("base/manifest/AndroidManifest.xml has no root element")
	case !m.hasRoot:
		return nil, errs.Invalidf("base/manifest/AndroidManifest.xml's root element is not <manifest>")
	}
	return m, nil
}

// aabElement decodes an XmlElement at depth (the root is 1): name = 3, attribute = 4 (repeated
// XmlAttribute), child = 5 (repeated XmlNode, whose element is field 1; text nodes are skipped).
// Only the root's children are descended into, which also bounds recursion on hostile nesting.
func aabElement(m *androidManifest, b []byte, depth int) error {
	name, _, err := aabString(b, 3, 32)
	if err != nil {
		return err
	}
	elem := androidElemOf(depth, name)
	if depth == 1 {
		m.root(elem)
	}
	return aabFields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case typ != protowire.BytesType:
		case num == 4 && elem != androidElemOther:
			return aabAttribute(m, elem, v)
		case num == 5 && depth == 1:
			return aabFields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == 1 && typ == protowire.BytesType {
					return aabElement(m, v, depth+1)
				}
				return nil
			})
		}
		return nil
	})
}

// aabAttribute decodes an XmlAttribute of elem: namespace_uri = 1, name = 2, value = 3 (the
// source text), resource_id = 5, compiled_item = 6 (an Item). The compiled item is what Android
// uses; the text value is the fallback, except text that is an uncompiled reference ("@...").
func aabAttribute(m *androidManifest, elem androidElem, b []byte) error {
	var (
		ns, name, text []byte
		hasText        bool
		item           []byte
		id             uint32
	)
	err := aabFields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			ns = v[:min(len(v), len(androidNS)+1)]
		case num == 2 && typ == protowire.BytesType:
			name = v[:min(len(v), 32)]
		case num == 3 && typ == protowire.BytesType:
			text, hasText = v, true
		case num == 5 && typ == protowire.VarintType:
			id = uint32(x)
		case num == 6 && typ == protowire.BytesType:
			item = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	f := androidFieldOf(elem, id, string(ns), string(name))
	if !m.want(f) {
		return nil
	}
	maxText := f.maxText()
	var v androidValue
	if item != nil {
		if v, err = aabItem(item, maxText); err != nil {
			return err
		}
	}
	if v.kind == androidNone && hasText && len(text) > 0 && text[0] != '@' && text[0] != '?' {
		v = androidValue{kind: androidString, str: string(text[:min(len(text), maxText)])}
	}
	if v.kind != androidNone {
		m.set(f, v)
	}
	return nil
}

// aabItem decodes an Item: ref = 1 (Reference: type = 1, 0 for a plain reference; id = 2),
// str = 2, raw_str = 3, styled_str = 4 (each with value = 1), file = 5 (FileReference: path = 1),
// prim = 7 (Primitive: int_decimal_value = 6, int_hexadecimal_value = 7, boolean_value = 8; its
// other members are floats, colors and dimensions).
func aabItem(b []byte, maxText int) (androidValue, error) {
	var v androidValue
	err := aabFields(b, func(num protowire.Number, typ protowire.Type, p []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			var refType, id uint64
			err := aabFields(p, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) error {
				switch {
				case t != protowire.VarintType:
				case n == 1:
					refType = x
				case n == 2:
					id = x
				}
				return nil
			})
			v = androidValue{kind: androidOther} // a theme attribute (?attr) or a name-only reference
			if refType == 0 && id != 0 {
				v = androidValue{kind: androidRef, num: uint32(id)}
			}
			return err
		case 2, 3, 4, 5:
			s, _, err := aabString(p, 1, maxText)
			v = androidValue{kind: androidString, str: s}
			return err
		case 7:
			v = androidValue{kind: androidOther}
			return aabFields(p, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) error {
				switch {
				case t != protowire.VarintType:
				case n == 6 || n == 7:
					v = androidValue{kind: androidInt, num: uint32(x)}
				case n == 8:
					v = androidValue{kind: androidBool, num: uint32(min(x, 1))}
				}
				return nil
			})
		}
		return nil
	})
	return v, err
}

// aabResources looks resource ids up in base/resources.pb, walking only the matching package
// and type on each lookup.
type aabResources struct {
	b     []byte
	cache map[uint32][]androidResEntry
	work  int // fields visited by lookups, against androidMaxLookupWork
}

// errAABTooComplex ends a lookup that would exceed androidMaxLookupWork.
var errAABTooComplex = errors.New("too convoluted to resolve the manifest's references")

// fields is aabFields counting each field visited against the lookup budget.
func (t *aabResources) fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	return aabFields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if t.work++; t.work > androidMaxLookupWork {
			return errAABTooComplex
		}
		return fn(num, typ, v, x)
	})
}

func newAABResources(b []byte) *aabResources {
	return &aabResources{b: b, cache: map[uint32][]androidResEntry{}}
}

// id returns the id field (1) of a Package, Type or Entry message: a PackageId/TypeId/EntryId
// message (its field 1), or a plain varint as early aapt2 versions wrote it. found is false when
// the field is absent.
func (t *aabResources) id(b []byte) (id uint64, found bool, err error) {
	err = t.fields(b, func(n protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if n != 1 {
			return nil
		}
		switch typ {
		case protowire.VarintType:
			id, found = x, true
		case protowire.BytesType:
			id, found = 0, true
			return t.fields(v, func(n protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
				if n == 1 && typ == protowire.VarintType {
					id = x
				}
				return nil
			})
		}
		return nil
	})
	return id, found, err
}

// lookup walks ResourceTable.package = 2 → Package{package_id = 1, type = 3} →
// Type{type_id = 1, entry = 3} → Entry{entry_id = 1, config_value = 6} → ConfigValue.
func (t *aabResources) lookup(id uint32) ([]androidResEntry, error) {
	if e, ok := t.cache[id]; ok {
		return e, nil
	}
	var out []androidResEntry
	// matching calls fn for each message field num of b whose id equals want.
	matching := func(b []byte, num protowire.Number, want uint32, fn func(v []byte) error) error {
		return t.fields(b, func(n protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if n != num || typ != protowire.BytesType {
				return nil
			}
			got, found, err := t.id(v)
			if err != nil || !found || got != uint64(want) {
				return err
			}
			return fn(v)
		})
	}
	err := matching(t.b, 2, id>>24, func(pkg []byte) error {
		return matching(pkg, 3, id>>16&0xff, func(typ []byte) error {
			return matching(typ, 3, id&0xffff, func(entry []byte) error {
				return t.fields(entry, func(n protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
					if n != 6 || typ != protowire.BytesType || len(out) == androidMaxConfigs {
						return nil
					}
					e, ok, err := aabConfigValue(v)
					if ok {
						out = append(out, e)
					}
					return err
				})
			})
		})
	})
	switch {
	case errors.Is(err, errAABTooComplex):
		return nil, errs.Invalidf("base/resources.pb is %s", errAABTooComplex)
	case err != nil:
		return nil, errs.Wrap(errs.Invalid, err, "base/resources.pb is not a valid aapt2 resource table")
	}
	t.cache[id] = out
	return out, nil
}

// aabConfigValue decodes a ConfigValue: config = 1 (Configuration), value = 2 (Value, whose
// item = 4; compound values such as styles have none and are skipped).
func aabConfigValue(b []byte) (e androidResEntry, ok bool, err error) {
	var cfg, item []byte
	err = aabFields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case typ != protowire.BytesType:
		case num == 1:
			cfg = v
		case num == 2:
			return aabFields(v, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) error {
				if n == 4 && t == protowire.BytesType {
					item = v
				}
				return nil
			})
		}
		return nil
	})
	if err != nil || item == nil {
		return e, false, err
	}
	if e.val, err = aabItem(item, androidMaxText); err != nil {
		return e, false, err
	}
	e.cfg, e.extra, err = aabConfig(cfg)
	return e, err == nil, err
}

// aabConfig maps a Configuration onto androidbinary's ResTableConfig, enough for Android's
// matching rules to tell the default configuration from qualified ones. Fields: mcc = 1, mnc = 2,
// locale = 3 (BCP-47), layout_direction = 4, screen_width = 5, screen_height = 6,
// screen_width_dp = 7, screen_height_dp = 8, smallest_screen_width_dp = 9,
// screen_layout_size = 10, screen_layout_long = 11, orientation = 15, ui_mode_type = 16,
// ui_mode_night = 17, density = 18, touchscreen = 19, keys_hidden = 20, keyboard = 21,
// nav_hidden = 22, navigation = 23, sdk_version = 24. Any other field set (screen_round = 12,
// wide_color_gamut = 13, hdr = 14, product = 25, later additions) makes the config extra.
func aabConfig(b []byte) (cfg ab.ResTableConfig, extra bool, err error) {
	err = aabFields(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		if num == 3 && typ == protowire.BytesType {
			if len(v) > 0 {
				aabLocale(&cfg, string(v[:min(len(v), 32)]))
			}
			return nil
		}
		if typ != protowire.VarintType {
			extra = true
			return nil
		}
		switch num {
		case 1:
			cfg.Mcc = uint16(x)
		case 2:
			cfg.Mnc = uint16(x)
		case 4:
			cfg.ScreenLayout |= ab.ScreenLayout(x<<6) & ab.MaskLayoutDir
		case 5:
			cfg.ScreenWidth = uint16(x)
		case 6:
			cfg.ScreenHeight = uint16(x)
		case 7:
			cfg.ScreenWidthDp = uint16(x)
		case 8:
			cfg.ScreenHeightDp = uint16(x)
		case 9:
			cfg.SmallestScreenWidthDp = uint16(x)
		case 10:
			cfg.ScreenLayout |= ab.ScreenLayout(x) & ab.MaskScreenSize
		case 11: // LONG = 1, NOTLONG = 2, the reverse of SCREENLONG_YES/NO
			cfg.ScreenLayout |= ab.ScreenLayout(aabFlip12(x)<<4) & ab.MaskScreenLong
		case 15:
			cfg.Orientation = uint8(x)
		case 16:
			cfg.UIMode |= ab.UIMode(x) & ab.MaskUIModeType
		case 17: // NIGHT = 1, NOTNIGHT = 2, the reverse of UI_MODE_NIGHT_YES/NO
			cfg.UIMode |= ab.UIMode(aabFlip12(x)<<4) & ab.MaskUIModeNight
		case 18:
			cfg.Density = uint16(x)
		case 19:
			cfg.Touchscreen = uint8(x)
		case 20:
			cfg.InputFlags |= ab.InputFlags(x) & ab.MaskKeysHidden
		case 21:
			cfg.Keyboard = uint8(x)
		case 22:
			cfg.InputFlags |= ab.InputFlags(x<<2) & ab.MaskNavHidden
		case 23:
			cfg.Navigation = uint8(x)
		case 24:
			cfg.SDKVersion = uint16(x)
		default:
			extra = extra || x != 0
		}
		return nil
	})
	return cfg, extra, err
}

// aabFlip12 swaps the values 1 and 2 of an enum whose order is the reverse of ResTable_config's.
func aabFlip12(x uint64) uint64 {
	switch x {
	case 1:
		return 2
	case 2:
		return 1
	}
	return x
}

// aabLocale sets cfg's language and region from a BCP-47 tag ("zh-CN", "b+sr+Latn"); a tag
// without a two-letter language still marks the config as localized.
func aabLocale(cfg *ab.ResTableConfig, tag string) {
	parts := strings.FieldsFunc(tag, func(r rune) bool { return r == '-' || r == '_' || r == '+' })
	if len(parts) > 0 && parts[0] == "b" {
		parts = parts[1:]
	}
	cfg.Language = [2]uint8{'x', 'x'}
	if len(parts) > 0 && len(parts[0]) >= 2 {
		lang := strings.ToLower(parts[0])
		cfg.Language = [2]uint8{lang[0], lang[1]}
	}
	for _, p := range parts[min(len(parts), 1):] {
		if p = strings.TrimPrefix(p, "r"); len(p) == 2 {
			cfg.Country = [2]uint8{p[0], p[1]}
			break
		}
	}
}
