package httpapi

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// everyKind is a request with a field of each kind the binding reads.
type everyKind struct {
	Name     string   `param:"name"`
	Note     *string  `param:"note"`
	Log      *string  `param:"log,json"`
	Size     *string  `param:"size,number"`
	On       *bool    `param:"on"`
	Count    *int     `param:"count"`
	Apps     []string `param:"apps"`
	Events   []string `param:"events,names"`
	Keep     *int     `param:"keep,nullable"`
	MaxBytes *int64   `param:"max_bytes,nullable"`
	Ignored  string
}

func bound(t *testing.T, method, target, ctype, body string, strict bool) (everyKind, error) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", ctype)
	}
	c.Request = r
	var got everyKind
	var err error
	if strict {
		err = bindStrict(c, &got)
	} else {
		err = bind(c, &got)
	}
	return got, err
}

func ptr[T any](v T) *T { return &v }

// The binding reads each kind as the getters always did, from a JSON body, a form and the query
// string alike (the body wins over the query), and names the field a bad value is in.
func TestBindReadsEveryKind(t *testing.T) {
	want := everyKind{Name: "Desk", Note: ptr(""), Log: ptr(`[{"message":"m"}]`), Size: ptr("1000"), On: ptr(true), Count: ptr(3),
		Apps: []string{"a", "7"}, Events: []string{"release.created", "release.deleted"}, Keep: ptr(2), MaxBytes: ptr(int64(1 << 40))}
	got, err := bound(t, "PATCH", "/x?name=Query", "application/json", `{"name":"Desk","note":null,"log":[{"message":"m"}],"size":1000,"on":true,
		"count":3,"apps":["a",7],"events":" release.created, release.deleted","keep":"2","max_bytes":1099511627776}`, false)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("JSON body: %+v (%v), want %+v", got, err, want)
	}
	got, err = bound(t, "POST", "/x", "application/x-www-form-urlencoded",
		"name=Desk&note=&log=%5B%7B%22message%22%3A%22m%22%7D%5D&size=1000&on=1&count=3&apps=a,7&events=release.created,,release.deleted&keep=2&max_bytes=1099511627776", false)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("form body: %+v (%v), want %+v", got, err, want)
	}
	// Absent: the zero value of each (nil: leave the field as it is; "" for a plain string).
	if got, err := bound(t, "GET", "/x", "", "", false); err != nil || !reflect.DeepEqual(got, everyKind{}) {
		t.Errorf("nothing sent: %+v (%v)", got, err)
	}
	// Nullable integers inherit on null and "".
	if got, err := bound(t, "PUT", "/x", "application/json", `{"keep":null,"max_bytes":""}`, false); err != nil || got.Keep != nil || got.MaxBytes != nil {
		t.Errorf("null and empty nullable integers: %+v (%v)", got, err)
	}
	for body, field := range map[string]string{`{"name":1}`: "name", `{"note":[1]}`: "note", `{"size":{}}`: "size", `{"on":"maybe"}`: "on",
		`{"count":"many"}`: "count", `{"apps":{}}`: "apps", `{"events":[1]}`: "events", `{"keep":1.5}`: "keep", `{"max_bytes":true}`: "max_bytes"} {
		_, err := bound(t, "PATCH", "/x", "application/json", body, false)
		if e, ok := errs.AsError(err); !ok || e.Kind != errs.Invalid || len(e.Entry[field]) == 0 {
			t.Errorf("%s: %v, want an error on %s", body, err, field)
		}
	}
	// Strict: a body parameter the request does not take is refused; the query may carry others.
	if _, err := bound(t, "PUT", "/x?token=t", "application/json", `{"keep":1}`, true); err != nil {
		t.Errorf("strict with a query token: %v", err)
	}
	if _, err := bound(t, "PUT", "/x", "application/json", `{"keep_build":1}`, true); err == nil || !strings.Contains(err.Error(), "keep_build is not a parameter") {
		t.Errorf("strict with an unknown parameter: %v", err)
	}
}

// A tagged field of a type the binding does not read is a programming error, found at once.
func TestBindRefusesUnknownTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a float64 field")
		}
	}()
	fieldsOf(reflect.TypeFor[struct {
		F float64 `param:"f"`
	}]())
}

// FuzzBind: whatever JSON or form body arrives, the binding answers a value or an Invalid (or
// TooLarge) error, never a panic or another kind.
func FuzzBind(f *testing.F) {
	f.Add("application/json", `{"name":"a","count":1,"apps":["x",2],"events":"a,b","keep":null}`)
	f.Add("application/x-www-form-urlencoded", "name=a&on=0&count=-1&keep=")
	f.Add("application/json", `[1,2]`)
	f.Fuzz(func(t *testing.T, ctype, body string) {
		if ctype != "application/json" && ctype != "application/x-www-form-urlencoded" {
			ctype = "application/json"
		}
		_, err := bound(t, "POST", "/x", ctype, body+" ", false)
		if e, ok := errs.AsError(err); err != nil && (!ok || e.Kind != errs.Invalid && e.Kind != errs.TooLarge) {
			t.Fatalf("%q: %v", body, err)
		}
	})
}
