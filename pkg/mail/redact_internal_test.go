package mail

import (
	"net/textproto"
	"strings"
	"testing"
)

// TestFailCleansTheReply: a relay's reply that repeats the recipient (or, however unlikely, the
// password) is stored and logged without them.
func TestFailCleansTheReply(t *testing.T) {
	c := &Client{opts: Options{Password: "hunter2-long"}}
	err := c.fail("rcpt to", &textproto.Error{Code: 550, Msg: "5.1.1 <bob.smith+qa@example.com>: Recipient address rejected; hunter2-long"})
	e := err.(*Error)
	if e.Class != Permanent || e.Code != 550 {
		t.Errorf("%#v", e)
	}
	for _, secret := range []string{"bob.smith", "example.com", "hunter2-long"} {
		if strings.Contains(e.Error(), secret) {
			t.Errorf("%q holds %q", e.Error(), secret)
		}
	}
	if !strings.Contains(e.Error(), "550 5.1.1 <<address>>: Recipient address rejected") {
		t.Errorf("%q", e.Error())
	}
	if Password("x").String() != "[redacted]" {
		t.Error("a Password prints")
	}
}
