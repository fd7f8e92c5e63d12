package webhook

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"
)

// chatFormats are the formats rendered for a chat service.
var chatFormats = []string{FormatSlack, FormatTeams, FormatDiscord, FormatDingTalk, FormatFeishu, FormatWeCom}

// FuzzRender renders releases with fuzzed names, branch and changelog line in every chat format,
// seeded with issue 20's finding 9. Whatever they hold, no syntax of the format comes out of them:
// in Slack no "<" or ">" and no "&" outside an entity but in the link Slipway adds; in the others
// every "<" and "]" is followed by a zero-width space, and Discord's @everyone and @here are
// broken, except in Slipway's own "[Open the release page](…)".
func FuzzRender(f *testing.F) {
	env := hostileEnvelope()
	for _, line := range env.Release.Changelog {
		f.Add(env.App.Name, env.Channel.Name, env.Release.Branch, line)
	}
	f.Add("Demo", "Beta", "main", "Fix login")
	f.Fuzz(func(t *testing.T, app, channel, branch, line string) {
		const page = "https://slipway.example/channels/beta/releases/3"
		env := sampleEnvelope(EventReleaseCreated)
		env.App.Name, env.Channel.Name, env.Release.Branch = app, channel, branch
		env.Release.ReleaseVersion, env.Release.Changelog = line, []string{line, app}
		for _, format := range chatFormats {
			body, err := Render(format, env)
			if err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%s: not JSON: %s", format, body)
			}
			msg, _ := chatMessage(t, format, body)
			switch format {
			case FormatSlack:
				msg = strings.Replace(msg, "<"+page+"|Open the release page>", "", 1)
				if strings.ContainsAny(msg, "<>") {
					t.Fatalf("slack: a < or > from user text: %q", msg)
				}
				rest := strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(msg)
				if strings.Contains(rest, "&") {
					t.Fatalf("slack: an unescaped &: %q", msg)
				}
			default:
				msg = strings.Replace(msg, "[Open the release page]("+page+")", "", 1)
				msg = strings.TrimSuffix(msg, "…") // Discord's truncation may cut after a "]"
				for i := 0; i < len(msg); i++ {
					if (msg[i] == '<' || msg[i] == ']') && !strings.HasPrefix(msg[i+1:], zwsp) && !(format == FormatDiscord && i == len(msg)-1) {
						t.Fatalf("%s: a %q from user text is live at %d: %q", format, msg[i], i, msg)
					}
				}
				if format == FormatDiscord && (strings.Contains(msg, "@everyone") || strings.Contains(msg, "@here")) {
					t.Fatalf("discord: a live @everyone or @here: %q", msg)
				}
			}
			if format == FormatDiscord && utf8.RuneCountInString(msg) > discordLimit {
				t.Fatalf("discord: %d characters", utf8.RuneCountInString(msg))
			}
		}
	})
}

// FuzzDisallowed checks the address guard on every IPv6 address, seeded with issue 20's finding
// 10: an address of a NAT64 or 6to4 prefix is refused whenever the IPv4 address it embeds is.
func FuzzDisallowed(f *testing.F) {
	for _, tc := range embeddedIPv4Attacks {
		b := netip.MustParseAddr(tc.addr).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 && len(b) != 4 {
			return
		}
		ip, _ := netip.AddrFromSlice(b)
		_, bad := Disallowed(ip)
		if v4, ok := embeddedIPv4(ip); ok {
			if _, v4bad := Disallowed(v4); v4bad && !bad {
				t.Fatalf("%s allowed, but it reaches %s, which is not", ip, v4)
			}
		}
		if ip.Is4In6() {
			if _, v4bad := Disallowed(ip.Unmap()); v4bad != bad {
				t.Fatalf("%s and %s judged differently", ip, ip.Unmap())
			}
		}
	})
}
