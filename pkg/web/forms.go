package web

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// How the console's forms behave, as forms on the web do (docs/decisions.md, "Console forms"):
//
//   - Post/Redirect/Get: a form that worked answers 303 to the page that shows its result, with a
//     one-time flash message carried by a cookie; reloading that page repeats nothing.
//   - Each rendered form carries a signed, single-use form token (formFields). The first POST
//     with it claims it (console_forms); a resubmission or a double click finds it claimed, does
//     nothing and is sent to the page the first one ended on, with "that was already done".
//   - A form that fails for its input re-renders its own page with status 422, the message beside
//     the field in the form's words, and what was typed kept (formState).

// flashCookie carries the message for the next console page, sealed (AES-GCM) with a key derived
// from SLIPWAY_SECRET and the session, so it is unreadable on disk and worthless in another
// session. It may carry a secret to show once (a new webhook's or token's).
const flashCookie = "slipway_flash"

const flashTTL = 5 * time.Minute

// flash is the message a form leaves for the page it redirects to.
type flash struct {
	// Kind is "ok" (green), "info" or "error" (red).
	Kind    string `json:"k"`
	Message string `json:"m"`
	// Secret is shown once, in an element with the id SecretID.
	Secret   string `json:"s,omitempty"`
	SecretID string `json:"i,omitempty"`
}

// flashAEADs are the ciphers of a session's flash: with the current SLIPWAY_SECRET first (it
// seals), then with each previous one (they open what a replica not yet rotated sealed).
func (h *Handler) flashAEADs(session string) []cipher.AEAD {
	var out []cipher.AEAD
	for _, sig := range h.svc.Signer.SignAll("console-flash", session) {
		key := sha256.Sum256([]byte(sig))
		block, err := aes.NewCipher(key[:])
		if err != nil {
			continue
		}
		if aead, err := cipher.NewGCM(block); err == nil {
			out = append(out, aead)
		}
	}
	return out
}

// setFlash leaves f for the next console page this browser shows.
func (h *Handler) setFlash(c *gin.Context, session string, f flash) {
	aeads := h.flashAEADs(session)
	if len(aeads) == 0 {
		return
	}
	aead := aeads[0]
	plain, _ := json.Marshal(f)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return
	}
	h.setCookie(c, flashCookie, base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(flashCookie))), flashTTL)
}

// takeFlash returns the flash left for this page, once: the cookie is cleared in the answer.
func (h *Handler) takeFlash(c *gin.Context, session string) *flash {
	raw, err := c.Cookie(flashCookie)
	if err != nil || raw == "" {
		return nil
	}
	h.setCookie(c, flashCookie, "", -time.Second)
	sealed, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return nil
	}
	for _, aead := range h.flashAEADs(session) {
		if len(sealed) < aead.NonceSize() {
			return nil
		}
		plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(flashCookie))
		if err != nil {
			continue
		}
		var f flash
		if json.Unmarshal(plain, &f) != nil {
			return nil
		}
		return &f
	}
	return nil
}

// formFields is the template function that writes a form's hidden fields: the session's CSRF
// token and a fresh single-use form token, "<nonce>.<expiry>.<signature>", signed with the CSRF
// token (so it is worth nothing in another session).
func (h *Handler) formFields(csrf string) template.HTML {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	tok := nonce + "." + h.svc.Signer.Token("console-form", access.FormTokenTTL, csrf, nonce)
	return template.HTML(`<input type="hidden" name="csrf" value="` + template.HTMLEscapeString(csrf) +
		`"><input type="hidden" name="form_token" value="` + template.HTMLEscapeString(tok) + `">`)
}

// formNonce checks a posted form token against the posted CSRF token (already checked against
// the session) and returns its nonce.
func (h *Handler) formNonce(csrf, tok string) (string, bool) {
	nonce, rest, ok := strings.Cut(tok, ".")
	if !ok || nonce == "" || len(tok) > 200 {
		return "", false
	}
	return nonce, h.svc.Signer.CheckToken(rest, "console-form", csrf, nonce)
}

// formState is a failed form's input and message, for its page to show in place. The zero value
// is no failure; its methods are what templates call.
type formState struct {
	// ID names the form (its element id); Field the input the message belongs beside ("" for the
	// form as a whole).
	ID, Field, Message string
	Values             url.Values
}

// Val is what a form's field shows: what was typed when this form failed, else dflt.
func (s formState) Val(id, field, dflt string) string {
	if s.ID == id && s.Values != nil {
		return s.Values.Get(field)
	}
	return dflt
}

// Err is the message beside a field of form id ("" when none).
func (s formState) Err(id, field string) string {
	if s.ID == id && s.Field == field {
		return s.Message
	}
	return ""
}

// Failed reports whether form id is the one that failed.
func (s formState) Failed(id string) bool { return s.ID != "" && s.ID == id }

// Top is the message of form id that belongs to no one field.
func (s formState) Top(id string) string {
	if s.ID == id && s.Field == "" {
		return s.Message
	}
	return ""
}

// Checked is whether a checkbox of form id is ticked: as sent when this form failed, else dflt.
func (s formState) Checked(id, field, value string, dflt bool) bool {
	if s.ID == id && s.Values != nil {
		for _, v := range s.Values[field] {
			if v == value {
				return true
			}
		}
		return false
	}
	return dflt
}

// fieldLabel is how a form names a field the domain names otherwise ("slug" is the form's "Key").
type fieldLabel struct{ Field, Label string }

// formCall is one POST of a console form, as its handler sees it.
type formCall struct {
	session string
	user    *distribution.User
	nonce   string
	// flash is the message for the page redirected to.
	flash flash
	// The handler names its form, how it labels the domain's fields, and how its page is
	// rendered again with the form's failure, before it acts; errors of these kinds are then
	// shown in place (Invalid and Conflict always; NotFound where the form names something, such
	// as a member's email).
	formID      string
	labels      map[string]fieldLabel
	rerender    func(formState) error
	notFoundToo bool
	// answered: the handler wrote the answer itself, having changed nothing (a preview).
	answered bool
}

// inPlace says which form this is and how its page shows a failure.
func (f *formCall) inPlace(id string, labels map[string]fieldLabel, rerender func(formState) error) {
	f.formID, f.labels, f.rerender = id, labels, rerender
}

func (f *formCall) ok(format string, args ...any) {
	f.flash = flash{Kind: "ok", Message: fmt.Sprintf(format, args...)}
}

// duplicateWait bounds how long a double click's second POST waits for the first to finish,
// to be sent where the first one went.
const duplicateWait = 5 * time.Second

// form adapts a console form handler: it checks the session and the CSRF token, claims the form
// token, runs the action, and answers 303 to the page the action names (with its flash), or
// re-renders the form's page with the failure in place (422), or an error page.
func (h *Handler) form(fn func(c *gin.Context, f *formCall) (string, error)) gin.HandlerFunc {
	return h.page(func(c *gin.Context) error {
		ctx := reqCtx(c)
		session, u, err := h.consoleForm(c)
		if err != nil {
			return err
		}
		ctx = reqCtx(c) // (consoleForm made the request act as the user)
		f := &formCall{session: session, user: u}
		if tok := c.PostForm("form_token"); tok != "" {
			nonce, ok := h.formNonce(c.PostForm("csrf"), tok)
			if !ok {
				return errs.New(errs.Forbidden, "this form is too old to send; reload the page and fill it in again")
			}
			for deadline := time.Now().Add(duplicateWait); ; {
				claimed, result, err := h.svc.Forms.Claim(ctx, nonce)
				if err != nil {
					return err
				}
				if claimed {
					break
				}
				if result != "" || time.Now().After(deadline) {
					if result == "" {
						result = h.links.Base + "/console"
					}
					h.setFlash(c, session, flash{Kind: "info", Message: "That was already done: this form had been sent, so nothing was done again."})
					c.Redirect(http.StatusSeeOther, result)
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
			f.nonce = nonce
		}
		to, err := fn(c, f)
		if err == nil && f.answered {
			if f.nonce != "" {
				_ = h.svc.Forms.Release(ctx, f.nonce)
			}
			return nil
		}
		if err != nil {
			if f.nonce != "" {
				_ = h.svc.Forms.Release(ctx, f.nonce)
			}
			kind := errs.KindOf(err)
			if f.rerender != nil && (kind == errs.Invalid || kind == errs.Conflict || (kind == errs.NotFound && f.notFoundToo)) {
				return f.rerender(h.failedForm(c, f, err))
			}
			return err
		}
		if f.nonce != "" {
			if err := h.svc.Forms.Finish(ctx, f.nonce, to); err != nil {
				h.log.WarnContext(ctx, "recording a console form's result failed", "error", err.Error())
			}
		}
		if f.flash.Message != "" {
			h.setFlash(c, session, f.flash)
		}
		c.Redirect(http.StatusSeeOther, to)
		return nil
	})
}

// failedForm is the form's failure in its own words: the field the domain named, by the form's
// label ("Key", not "slug"), and "empty" where the API says "null".
func (h *Handler) failedForm(c *gin.Context, f *formCall, err error) formState {
	s := formState{ID: f.formID, Values: formValues(c), Message: consoleWords(h.describe(c, err).Message)}
	if e, ok := errs.AsError(err); ok && len(e.Entry) == 1 {
		for name, msgs := range e.Entry {
			l, ok := f.labels[name]
			if !ok {
				l = fieldLabel{Field: name, Label: strings.ToUpper(name[:1]) + strings.ReplaceAll(name[1:], "_", " ")}
			}
			s.Field = l.Field
			if len(msgs) > 0 {
				s.Message = l.Label + " " + consoleWords(msgs[0])
			}
		}
	}
	return s
}

// formValues is what was typed into a form, to show again: never the hidden tokens, passwords
// or secrets.
func formValues(c *gin.Context) url.Values {
	_ = c.Request.ParseForm()
	values := url.Values{}
	for k, v := range c.Request.PostForm {
		if k != "csrf" && k != "form_token" && !strings.Contains(k, "password") && !strings.Contains(k, "secret") {
			values[k] = v
		}
	}
	return values
}

// consoleWords turns the API's wording into the form's.
func consoleWords(msg string) string {
	msg = strings.ReplaceAll(msg, "or null to inherit", "or empty to inherit")
	msg = strings.ReplaceAll(msg, "1000000", "1,000,000")
	if msg != "" && !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// consoleNav is the console's header: where one can go, who is signed in, and signing out.
type consoleNav struct {
	User       *distribution.User
	CSRF, Base string
	// Can is what the person may do anywhere (the header links only to what they may use).
	Can grants
}

// Who is how the header names the signed-in person: their name, else their email.
func (n consoleNav) Who() string {
	if n.User.Name != "" {
		return n.User.Name
	}
	if n.User.Email != "" {
		return n.User.Email
	}
	return "user " + strconv.FormatInt(n.User.ID, 10)
}

// Email is shown beside the name when both are known.
func (n consoleNav) Email() string {
	if n.User.Name != "" {
		return n.User.Email
	}
	return ""
}

func (h *Handler) nav(c *gin.Context, session string, u *distribution.User) *consoleNav {
	return &consoleNav{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Can: h.grants(c, 0)}
}

// consoleRender writes a signed-in console page: the header, the breadcrumbs, and the flash the
// last form left (taken once).
func (h *Handler) consoleRender(c *gin.Context, status int, name string, p page, session string, u *distribution.User) {
	p.Nav = h.nav(c, session, u)
	p.Flash = h.takeFlash(c, session)
	h.render(c, status, name, p, true)
}

// plural is "1 second", "2 seconds": n and the word, with an "s" unless n is 1.
func plural(n any, word string) string {
	s := fmt.Sprint(n)
	if s == "1" {
		return s + " " + word
	}
	return s + " " + word + "s"
}
