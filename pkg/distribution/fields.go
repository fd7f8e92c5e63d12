package distribution

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// ParseChangelog reads the changelog field (decisions.md): text that parses as a JSON array is the
// JSON form, an array of objects with a string message and optional string author, email and
// date; any other JSON array is an error. Anything else is plain text: one entry per non-blank
// line, a leading "- " or "* " stripped.
func ParseChangelog(text string) ([]ChangelogEntry, error) {
	trimmed := strings.TrimSpace(text)
	if strings.HasPrefix(trimmed, "[") {
		var raw []json.RawMessage
		if json.Unmarshal([]byte(trimmed), &raw) == nil {
			out := make([]ChangelogEntry, 0, len(raw))
			for i, item := range raw {
				var e ChangelogEntry
				if err := strictObject(item, &e); err != nil || strings.TrimSpace(e.Message) == "" {
					return nil, errs.Field("changelog", "entry %d must be an object with a string message and optional string author, email and date", i+1)
				}
				out = append(out, e)
			}
			return out, nil
		}
	}
	out := []ChangelogEntry{}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		for _, bullet := range []string{"- ", "* "} {
			line = strings.TrimSpace(strings.TrimPrefix(line, bullet))
		}
		if line != "" && line != "-" && line != "*" {
			out = append(out, ChangelogEntry{Message: line})
		}
	}
	return out, nil
}

// TextChangelog renders a changelog as "- <message>" lines.
func TextChangelog(entries []ChangelogEntry) string {
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// ParseCustomFields reads the custom_fields field: a JSON array of {name, value, icon} strings.
// Empty, "[]" and the fastlane plugin's default ["[]"] mean none.
func ParseCustomFields(text string) ([]CustomField, error) {
	text = strings.TrimSpace(text)
	if text == "" || text == "[]" || text == `["[]"]` {
		return []CustomField{}, nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return nil, errs.Field("custom_fields", "must be a JSON array of {\"name\", \"value\", \"icon\"} objects")
	}
	out := make([]CustomField, 0, len(raw))
	for i, item := range raw {
		var f CustomField
		if err := strictObject(item, &f); err != nil || strings.TrimSpace(f.Name) == "" {
			return nil, errs.Field("custom_fields", "entry %d must be an object with string name, value and icon", i+1)
		}
		out = append(out, f)
	}
	if len(out) > 50 {
		return nil, errs.Field("custom_fields", "may hold at most 50 entries")
	}
	return out, nil
}

// strictObject decodes a JSON object whose known fields must be strings; unknown fields are
// ignored so clients may send more than Slipway keeps.
func strictObject(raw json.RawMessage, v any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return errs.Invalidf("not an object")
	}
	for _, field := range []string{"message", "author", "email", "date", "name", "value", "icon"} {
		if val, ok := m[field]; ok && !bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return errs.Invalidf("%s is not a string", field)
			}
		}
	}
	return json.Unmarshal(raw, v)
}

// CleanBranch strips a leading "origin/" from a branch name (decisions.md).
func CleanBranch(branch string) string {
	return strings.TrimPrefix(strings.TrimSpace(branch), "origin/")
}

// SchemeName names the scheme an auto-created upload lands in, after its release type.
func SchemeName(releaseType string) string {
	switch strings.ToLower(releaseType) {
	case "", "adhoc":
		return "Adhoc"
	case "debug":
		return "Debug"
	case "release":
		return "Release"
	case "enterprise":
		return "Enterprise"
	case "appstore":
		return "AppStore"
	}
	rt := strings.ToLower(releaseType)
	return strings.ToUpper(rt[:1]) + rt[1:]
}

// EdSignature checks a Sparkle EdDSA signature field: "" or the base64 of a 64-byte Ed25519
// signature (the standard alphabet, padded, as Sparkle's sign_update prints it).
func EdSignature(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return "", errs.Field("ed_signature", "must be base64 (the EdDSA signature Sparkle's sign_update prints)")
	}
	if len(b) != ed25519.SignatureSize {
		return "", errs.Field("ed_signature", "must be an Ed25519 signature: 64 bytes, not %d", len(b))
	}
	return s, nil
}

// RolloutPercent reads a staged-rollout percentage: "" is 100 (everyone), else an integer 0-100.
func RolloutPercent(s string) (int, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if s == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 100 {
		return 0, errs.Field("rollout", "must be a percentage from 0 to 100")
	}
	return n, nil
}

// FlagField reads a boolean form field: "", "0", "false" or "no" is false; "1", "true" or "yes" true.
func FlagField(name, s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "0", "false", "no":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	}
	return false, errs.Field(name, "must be true or false")
}

// TauriSignature checks a Tauri updater signature field: "" or the content of the .sig file the
// Tauri signer writes (base64 of a minisign signature, whose text starts "untrusted comment:").
func TauriSignature(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !bytes.HasPrefix(b, []byte("untrusted comment:")) || bytes.Count(b, []byte("\n")) < 2 || len(s) > 4096 {
		return "", errs.Field("tauri_signature", "must be the content of the .sig file the Tauri signer wrote (base64 of a minisign signature)")
	}
	return s, nil
}
