package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Custom robots of DingTalk and Feishu can require a signature made with the robot's own secret,
// which the chat service gives when the robot is made ("加签" in DingTalk, "签名校验" in
// Feishu); a robot that requires one refuses unsigned messages. Slipway's own signature header is
// sent as well; they ignore it.

// RobotSigned reports whether messages in format can carry a robot signature.
func RobotSigned(format string) bool { return format == FormatDingTalk || format == FormatFeishu }

// signRobot returns the URL and body of a message signed for the robot of format (unchanged for
// other formats, or without a secret).
func signRobot(format, rawURL string, body []byte, secret string, now time.Time) (string, []byte, error) {
	if secret == "" {
		return rawURL, body, nil
	}
	switch format {
	case FormatDingTalk:
		u, err := url.Parse(rawURL)
		if err != nil {
			return "", nil, err
		}
		ts, sign := DingTalkSign(secret, now)
		q := u.Query()
		q.Set("timestamp", ts)
		q.Set("sign", sign)
		u.RawQuery = q.Encode()
		return u.String(), body, nil
	case FormatFeishu:
		var msg map[string]any
		if err := json.Unmarshal(body, &msg); err != nil {
			return "", nil, err
		}
		msg["timestamp"], msg["sign"] = FeishuSign(secret, now)
		signed, err := json.Marshal(msg)
		return rawURL, signed, err
	}
	return rawURL, body, nil
}

// DingTalkSign is DingTalk's robot signature: the time in milliseconds, and
// base64(HMAC-SHA256(key secret, message "timestamp\nsecret")), sent as the URL's timestamp and
// sign parameters.
func DingTalkSign(secret string, now time.Time) (timestamp, sign string) {
	timestamp = strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "\n" + secret))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// FeishuSign is Feishu's robot signature: the time in seconds, and
// base64(HMAC-SHA256(key "timestamp\nsecret", empty message)), sent as the body's timestamp and
// sign fields.
func FeishuSign(secret string, now time.Time) (timestamp, sign string) {
	timestamp = strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
