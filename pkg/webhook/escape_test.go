package webhook

import (
	"encoding/json"
	"strings"
	"testing"
)

// hostileEnvelope is a release whose user- and package-supplied values carry each chat format's
// mention and link syntax (issue 20, finding 9): an uploader could ping a whole channel or show
// "Release page" linking anywhere.
func hostileEnvelope() *Envelope {
	env := sampleEnvelope(EventReleaseCreated)
	env.App.Name = "<!channel> Demo @everyone"
	env.Channel.Name = "<!here|here> @here"
	env.Release.Branch = "<@U024BE7LH>"
	env.Release.ReleaseVersion = "[1.2.0](https://evil.example/v)"
	env.Release.Changelog = []string{
		"<https://evil.example/a|Release page>",
		"[Release page](https://evil.example/b)",
		"![](https://evil.example/pixel.png)",
		`<at user_id="all">所有人</at>`,
		"<@wecom_user> <@&123456789012345678> <font color=\"red\">urgent</font>",
		"[Release page][x]\n[x]: https://evil.example/c",
		"a & b",
	}
	// What changed comes from the package too (permission names, component paths, versions).
	env.Release.Insights = &InsightsInfo{Summary: []string{"new permission: <!channel> @everyone",
		"new framework: [Release page](https://evil.example/f) (+1 MB)"}, BudgetWarnings: []string{"<https://evil.example/b|budget> <@U024BE7LH>"}}
	return env
}

// chatMessage returns the text a chat service renders from body, and the body as a map.
func chatMessage(t *testing.T, format string, body []byte) (string, map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	get := func(path ...string) string {
		var v any = m
		for _, p := range path {
			mm, _ := v.(map[string]any)
			v = mm[p]
		}
		s, _ := v.(string)
		return s
	}
	switch format {
	case FormatSlack:
		return get("text"), m
	case FormatDiscord:
		return get("content"), m
	case FormatDingTalk:
		return get("markdown", "title") + "\n" + get("markdown", "text"), m
	case FormatFeishu:
		return get("content", "text"), m
	case FormatWeCom:
		return get("markdown", "content"), m
	case FormatTeams:
		return get("title") + "\n" + get("summary") + "\n" + get("text"), m
	}
	t.Fatalf("no chat format %s", format)
	return "", nil
}

// TestChatMessagesEscapeUserText replays issue 20's finding 9: mentions and masked links in app
// and channel names, branches, versions and changelogs reach no chat format as syntax, while the
// release-page link Slipway adds stays a link.
func TestChatMessagesEscapeUserText(t *testing.T) {
	const page = "https://slipway.example/channels/beta/releases/3"
	// Syntax that must not survive, by format: live mentions, masked links, images, tags.
	markdownLinks := []string{"](https://evil", "][x]", "]: https://evil", `<at user_id="all">`, "<@wecom_user>", "<font", "<https://evil"}
	forbidden := map[string][]string{
		FormatSlack:    {"<!channel>", "<!here", "<@U024BE7LH>", "<https://evil", "<@wecom_user>", "<font", "a & b"},
		FormatDiscord:  append([]string{"@everyone", "@here", "<@&123456789012345678>", "[Release page](", "[1.2.0]("}, markdownLinks...),
		FormatDingTalk: markdownLinks,
		FormatFeishu:   markdownLinks,
		FormatWeCom:    markdownLinks,
		FormatTeams:    markdownLinks,
	}
	// What Slipway itself puts in stays: the release page as a link, and the text readable.
	required := map[string][]string{
		FormatSlack:    {"<" + page + "|Open the release page>", "&lt;!channel&gt;", "a &amp; b", "Release page"},
		FormatDiscord:  {page, "Release page"},
		FormatDingTalk: {"[Open the release page](" + page + ")", "Release page", "所有人"},
		FormatFeishu:   {page, "Release page", "所有人"},
		FormatWeCom:    {"[Open the release page](" + page + ")", "Release page"},
		FormatTeams:    {"Release page"},
	}
	for format, bad := range forbidden {
		t.Run(format, func(t *testing.T) {
			body, err := Render(format, hostileEnvelope())
			if err != nil {
				t.Fatal(err)
			}
			msg, m := chatMessage(t, format, body)
			for _, s := range bad {
				if strings.Contains(msg, s) {
					t.Errorf("the message carries %q:\n%s", s, msg)
				}
			}
			for _, s := range required[format] {
				if !strings.Contains(msg, s) {
					t.Errorf("the message lacks %q:\n%s", s, msg)
				}
			}
			switch format {
			case FormatDiscord:
				am, _ := m["allowed_mentions"].(map[string]any)
				if p, ok := am["parse"].([]any); !ok || len(p) != 0 {
					t.Errorf("allowed_mentions = %v; want {\"parse\": []}", m["allowed_mentions"])
				}
			case FormatTeams:
				if !strings.Contains(string(body), `"uri":"`+page+`"`) {
					t.Errorf("the card has no action opening the release page: %s", body)
				}
			}
		})
	}
}

// TestChatMessagesSayWhatChanged: a release.created message says what changed since the previous
// build in one short line ("+3.2 MB (+4.1%), new permission: android.permission.CAMERA"), its first
// items only, and each size budget crossed, in every chat format; the canonical format carries the
// lines as sent.
func TestChatMessagesSayWhatChanged(t *testing.T) {
	env := sampleEnvelope(EventReleaseCreated)
	env.Release.Insights = &InsightsInfo{AgainstReleaseID: 2, Summary: []string{"+3.2 MB (+4.1%)", "new permission: android.permission.CAMERA"},
		BudgetWarnings: []string{"the build grew 4.1% (78.0 MB → 81.2 MB) since 1.1 (2), over the channel's maximum growth of 2%"}}
	long := sampleEnvelope(EventReleaseCreated)
	long.Release.Insights = &InsightsInfo{Summary: []string{"+1 MB", "a", "b", "c", "d", "e"}}
	for _, format := range Formats {
		if format == FormatSlipway {
			body, err := Render(format, env)
			if err != nil {
				t.Fatal(err)
			}
			var got Envelope
			if err := json.Unmarshal(body, &got); err != nil || got.Release.Insights == nil || got.Release.Insights.AgainstReleaseID != 2 ||
				len(got.Release.Insights.Summary) != 2 || len(got.Release.Insights.BudgetWarnings) != 1 {
				t.Errorf("slipway format: %s", body)
			}
			continue
		}
		body, err := Render(format, env)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := chatMessage(t, format, body)
		for _, want := range []string{"+3.2 MB (+4.1%), new permission: android.permission.CAMERA", "Size budget: the build grew 4.1%"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message lacks %q:\n%s", format, want, msg)
			}
		}
		body, err = Render(format, long)
		if err != nil {
			t.Fatal(err)
		}
		if msg, _ := chatMessage(t, format, body); !strings.Contains(msg, "+1 MB, a, b, c, and 2 more") || strings.Contains(msg, "Size budget") {
			t.Errorf("%s: long summary:\n%s", format, msg)
		}
	}
}

// TestFeedbackChatMessagesEscapeTheReport: a tester's report is text from anyone (on a channel
// open to anyone, anonymous): its mentions and links reach no chat format as syntax; the link to
// the report, Slipway's own, stays a link; a long report is cut.
func TestFeedbackChatMessagesEscapeTheReport(t *testing.T) {
	const report = "https://slipway.example/console/apps/1/feedback#feedback-7"
	hostile := "<!channel> @everyone [Release page](https://evil.example/b) <https://evil.example/a|click> <@U024BE7LH> a & b"
	env := sampleEnvelope(EventFeedbackCreated)
	env.Feedback = &FeedbackInfo{ID: 7, Text: hostile + " " + strings.Repeat("x", 2000), AuthorKind: "anonymous",
		Author: &TesterRef{Email: "<!here>@example.com"}, Device: "<@U024BE7LH> phone", Source: "page", Screenshots: 2, URL: report}
	forbidden := map[string][]string{
		FormatSlack:    {"<!channel>", "<!here", "<@U024BE7LH>", "<https://evil", "a & b"},
		FormatDiscord:  {"@everyone", "[Release page](", "](https://evil"},
		FormatDingTalk: {"](https://evil", "<https://evil"},
		FormatFeishu:   {"](https://evil", "<https://evil"},
		FormatWeCom:    {"](https://evil", "<https://evil"},
		FormatTeams:    {"](https://evil", "<https://evil"},
	}
	for format, bad := range forbidden {
		body, err := Render(format, env)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := chatMessage(t, format, body)
		for _, s := range bad {
			if strings.Contains(msg, s) {
				t.Errorf("%s: the message carries %q:\n%s", format, s, msg)
			}
		}
		if format != FormatTeams && !strings.Contains(msg, report) {
			t.Errorf("%s: no link to the report:\n%s", format, msg)
		}
		if !strings.Contains(msg, "2 screenshot(s)") || strings.Contains(msg, strings.Repeat("x", 700)) {
			t.Errorf("%s: the report's summary or its cut:\n%s", format, msg)
		}
	}
}
