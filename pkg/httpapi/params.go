package httpapi

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/problem"
)

// maxParamBodyBytes bounds JSON and form bodies of the non-upload endpoints.
const maxParamBodyBytes = 1 << 20

// params are a request's parameters: the query string merged with a JSON, urlencoded or multipart
// body (the body wins), as Rails merges them for Zealot's clients. Upload endpoints stream their
// multipart bodies instead and do not use params.
type params struct {
	values map[string]any
}

const paramsKey = "slipway.params"

// readParams parses the request's parameters once and caches them on the context.
func readParams(c *gin.Context) (*params, error) {
	if p, ok := c.Get(paramsKey); ok {
		return p.(*params), nil
	}
	p := &params{values: map[string]any{}}
	for k, v := range c.Request.URL.Query() {
		if len(v) > 0 {
			p.values[k] = v[0]
		}
	}
	r := c.Request
	if r.Body != nil && r.Body != http.NoBody && (r.ContentLength > 0 || r.ContentLength == -1) {
		r.Body = http.MaxBytesReader(c.Writer, r.Body, maxParamBodyBytes)
		mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch mediaType {
		case "application/json":
			var body map[string]any
			dec := json.NewDecoder(r.Body)
			dec.UseNumber()
			if err := dec.Decode(&body); err != nil {
				return nil, bodyErr(err, "the JSON body is not a JSON object")
			}
			for k, v := range body {
				p.values[k] = v
			}
		case "application/x-www-form-urlencoded":
			if err := r.ParseForm(); err != nil {
				return nil, bodyErr(err, "the form body cannot be parsed")
			}
			for k, v := range r.PostForm {
				if len(v) > 0 {
					p.values[k] = v[0]
				}
			}
		case "multipart/form-data":
			if err := r.ParseMultipartForm(maxParamBodyBytes); err != nil {
				return nil, bodyErr(err, "the multipart form cannot be parsed")
			}
			for k, v := range r.MultipartForm.Value {
				if len(v) > 0 {
					p.values[k] = v[0]
				}
			}
			_ = r.MultipartForm.RemoveAll()
		case "":
			return nil, errs.Invalidf("the request has a body but no Content-Type; send JSON or a form")
		default:
			return nil, errs.Invalidf("Content-Type %q is not accepted here; send application/json or a form", truncate(mediaType, 60))
		}
	}
	for k, v := range p.values {
		if err := cleanValue(k, v); err != nil {
			return nil, err
		}
	}
	c.Set(paramsKey, p)
	return p, nil
}

// cleanValue checks a body parameter (and, in a JSON body, every string inside it) for NUL bytes
// and invalid UTF-8.
func cleanValue(name string, v any) error {
	ok := true
	switch v := v.(type) {
	case string:
		ok = problem.CleanText(name) && problem.CleanText(v)
	case []any:
		for _, item := range v {
			if err := cleanValue(name, item); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, item := range v {
			if err := cleanValue(k, item); err != nil {
				return errs.Field(name, "holds a NUL byte or invalid UTF-8")
			}
		}
	}
	if !ok {
		return errs.Field(problem.SafeName(name), "holds a NUL byte or invalid UTF-8")
	}
	return nil
}

func bodyErr(err error, msg string) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errs.New(errs.TooLarge, "the request body is over the %d-byte limit of this endpoint", maxParamBodyBytes)
	}
	return errs.Wrap(errs.Invalid, err, "%s", msg)
}

// str returns the named parameter as a string ("" when absent). A JSON value that is not a
// string (a number, an object) is an error naming the field.
func (p *params) str(name string) (string, error) {
	v, ok := p.values[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", errs.Field(name, "must be a string")
	}
	return s, nil
}

// positiveInt parses an optional positive integer parameter, def when empty.
func positiveInt(name, raw string, def int) (int, error) {
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n <= 0 {
		return 0, errs.Field(name, "must be a positive integer")
	}
	return n, nil
}

// page reads page and per_page (decisions.md: defaults 1 and 25, per_page clamped to 100,
// non-integer, zero or negative values are a 422).
func page(c *gin.Context) (distribution.Page, error) {
	pg, err := positiveInt("page", c.Query("page"), 1)
	if err != nil {
		return distribution.Page{}, err
	}
	per, err := positiveInt("per_page", c.Query("per_page"), 25)
	if err != nil {
		return distribution.Page{}, err
	}
	if pg > 1_000_000 {
		return distribution.Page{}, errs.Field("page", "must be at most 1000000")
	}
	return distribution.Page{Page: pg, PerPage: min(per, 100)}, nil
}

// pathID parses an integer id from the path.
func pathID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.Field("id", "must be a positive integer")
	}
	return id, nil
}

// requireQuery returns a required query parameter or a 422 naming it.
func requireQuery(c *gin.Context, name string) (string, error) {
	v := strings.TrimSpace(c.Query(name))
	if v == "" {
		return "", errs.Field(name, "is required")
	}
	if len(v) > 1024 {
		return "", errs.Field(name, "is too long")
	}
	return v, nil
}

// list returns a parameter that is a list: a JSON array of strings or numbers, or a string of
// comma-separated items (a form field, the query string). nil when absent.
func (p *params) list(name string) ([]string, error) {
	switch v := p.values[name].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Split(v, ","), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			switch item := item.(type) {
			case string:
				out = append(out, item)
			case json.Number:
				out = append(out, item.String())
			default:
				return nil, errs.Field(name, "must be an array of strings or numbers")
			}
		}
		return out, nil
	}
	return nil, errs.Field(name, "must be an array or a comma-separated string")
}

// optStr returns the named parameter when it was sent (nil when absent), as for PUT and PATCH,
// which change only what a client sends. A JSON null counts as "" (clear the field).
func (p *params) optStr(name string) (*string, error) {
	v, ok := p.values[name]
	if !ok {
		return nil, nil
	}
	if v == nil {
		empty := ""
		return &empty, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, errs.Field(name, "must be a string")
	}
	return &s, nil
}

// optJSONText returns a parameter that holds JSON text in a form (changelog, custom_fields): a
// string is taken as is, and a JSON array or object in a JSON body is re-encoded as text.
func (p *params) optJSONText(name string) (*string, error) {
	switch v := p.values[name].(type) {
	case []any, map[string]any:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, errs.Field(name, "cannot be encoded")
		}
		s := string(b)
		return &s, nil
	}
	return p.optStr(name)
}

// optBool returns a boolean parameter: JSON true/false, or the form values true/false/1/0.
func (p *params) optBool(name string) (*bool, error) {
	v, ok := p.values[name]
	if !ok || v == nil {
		return nil, nil
	}
	switch v := v.(type) {
	case bool:
		return &v, nil
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return &b, nil
		}
	}
	return nil, errs.Field(name, "must be true or false")
}

// optInt returns an integer parameter: a JSON number or a form value.
func (p *params) optInt(name string) (*int, error) {
	v, ok := p.values[name]
	if !ok || v == nil {
		return nil, nil
	}
	var raw string
	switch v := v.(type) {
	case json.Number:
		raw = v.String()
	case string:
		raw = strings.TrimSpace(v)
	default:
		return nil, errs.Field(name, "must be an integer")
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return nil, errs.Field(name, "must be an integer")
	}
	return &n, nil
}

// optNumText returns a number parameter as text when it was sent (nil when absent): a JSON number
// or a form value; a JSON null or "" is "" (clear the setting). The use case parses it.
func (p *params) optNumText(name string) (*string, error) {
	v, ok := p.values[name]
	if !ok {
		return nil, nil
	}
	var raw string
	switch v := v.(type) {
	case nil:
	case json.Number:
		raw = v.String()
	case string:
		raw = strings.TrimSpace(v)
	default:
		return nil, errs.Field(name, "must be a number")
	}
	return &raw, nil
}
