package webhook

import (
	"strings"
)

// Chat messages are rendered from values Slipway does not control: app and channel names,
// versions and branches from uploads, changelog lines. Each chat format gives some characters a
// meaning, so that an uploader could ping a whole channel or hide a link behind a harmless name:
// Slack's <!channel>, <@U…> and <https://x|masked link>; Discord's @everyone,
// <@&role> and [masked](links); markdown links and images in DingTalk, WeCom, Teams and Feishu;
// Feishu's <at user_id="all"> and WeCom's <@userid> mentions; DingTalk's and WeCom's <font> tags.
// Every such value goes through its format's escaper before it is put in a message; the words
// and the release-page link Slipway adds itself are not escaped, so they keep their meaning.
//
// Slack documents its escaping: &, < and > become &amp;, &lt; and &gt;, and Slack shows them as
// the characters. The other services document no escape that all their clients honour, so a zero
// width space (U+200B, invisible) is put where it breaks the syntax without changing what is
// read: after every "<" (no tag, mention or autolink can start) and after every "]" (no inline
// link, image, reference link or link definition can form, as each needs "](", "][" or "]:"). For
// Discord, "@everyone" and "@here" are broken the same way, and the payload also carries
// allowed_mentions {"parse": []}, so that nothing in the message pings anyone.

// zwsp is the zero-width space that breaks a syntax without a visible change.
const zwsp = "\u200b"

// escaper makes one user- or package-supplied value inert in a chat format.
type escaper func(string) string

// slackEscaper is Slack's mrkdwn escaping of &, < and >.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escapeSlack(s string) string { return slackEscaper.Replace(s) }

// markdownEscaper breaks tags, mentions and links in the markdown of DingTalk, WeCom, Teams and
// Feishu's text.
var markdownEscaper = strings.NewReplacer("<", "<"+zwsp, "]", "]"+zwsp)

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

// discordEscaper is escapeMarkdown plus @everyone and @here.
var discordEscaper = strings.NewReplacer("<", "<"+zwsp, "]", "]"+zwsp, "@everyone", "@"+zwsp+"everyone", "@here", "@"+zwsp+"here")

func escapeDiscord(s string) string { return discordEscaper.Replace(s) }

// escaperFor returns the escaper of a chat format.
func escaperFor(format string) escaper {
	switch format {
	case FormatSlack:
		return escapeSlack
	case FormatDiscord:
		return escapeDiscord
	default:
		return escapeMarkdown
	}
}

// linkEscaper percent-encodes what would end or break a link Slipway puts in a message (Slack's
// <url|text>, markdown's [text](url)). Release URLs are Slipway's own and hold none of these;
// this only keeps a malformed base URL from breaking the message.
var linkEscaper = strings.NewReplacer(" ", "%20", "<", "%3C", ">", "%3E", "|", "%7C", "(", "%28", ")", "%29", "[", "%5B", "]", "%5D")

func safeLink(u string) string { return linkEscaper.Replace(u) }
