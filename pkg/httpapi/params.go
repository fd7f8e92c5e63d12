package httpapi

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/store"
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
	c.Set(paramsKey, p)
	return p, nil
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
func page(c *gin.Context) (store.Page, error) {
	pg, err := positiveInt("page", c.Query("page"), 1)
	if err != nil {
		return store.Page{}, err
	}
	per, err := positiveInt("per_page", c.Query("per_page"), 25)
	if err != nil {
		return store.Page{}, err
	}
	if pg > 1_000_000 {
		return store.Page{}, errs.Field("page", "must be at most 1000000")
	}
	return store.Page{Page: pg, PerPage: min(per, 100)}, nil
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
