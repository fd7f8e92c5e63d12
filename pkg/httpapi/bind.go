package httpapi

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/problem"
)

// bind reads a request's parameters (the query string merged with the body, as Zealot's Rails
// merges them: readParams) into dst, a pointer to a struct whose fields name their parameter in a
// `param` tag. The field's type says how the value is read, once for every endpoint:
//
//	string    `param:"name"`        a string ("" when absent; a JSON non-string is refused)
//	*string   `param:"name"`        sent or not (nil), a JSON null being "" (PATCH clears it)
//	*string   `param:"name,json"`   JSON text: a string as is, a JSON array or object re-encoded
//	*string   `param:"name,number"` a number as text ("" clears it); the use case parses it
//	*bool     `param:"name"`        true/false, or a form's true/false/1/0
//	*int      `param:"name"`        an integer
//	[]string  `param:"name"`        a JSON array of strings or numbers, or a comma-separated string
//	*int      `param:"name,nullable"` an integer, nil when absent, null or "" (inherit)
//	*int64    `param:"name,nullable"` the same, 64 bits
//	[]string  `param:"name,names"`  names: a JSON array of strings or comma-separated text, each
//	                                trimmed, empty ones dropped from text; nil when absent
//
// A field without a tag is left alone; a tagged field of another type is a programming error
// (bind panics, which the first test of the endpoint shows). What a value may be (a range, a
// pattern) is the use case's rule, not the binding's.
func bind(c *gin.Context, dst any) error {
	p, err := readParams(c)
	if err != nil {
		return err
	}
	return p.bind(dst)
}

// bindStrict is bind for a request that names every parameter it takes: a body parameter dst
// has no field for is refused (the query string may carry others: the token, Zealot's extras).
func bindStrict(c *gin.Context, dst any) error {
	p, err := readParams(c)
	if err != nil {
		return err
	}
	fields := fieldsOf(reflect.TypeOf(dst).Elem())
	known := make(map[string]bool, len(fields))
	var names []string
	for _, f := range fields {
		known[f.name] = true
		names = append(names, f.name)
	}
	for k := range p.values {
		if !known[k] && c.Request.URL.Query().Get(k) == "" {
			return errs.Field(problem.SafeName(k), "is not a parameter of this request; send %s", strings.Join(names, ", "))
		}
	}
	return p.bind(dst)
}

// bind fills dst from p (see the package function bind).
func (p *params) bind(dst any) error {
	v := reflect.ValueOf(dst).Elem()
	for _, f := range fieldsOf(v.Type()) {
		field := v.FieldByIndex(f.index)
		var got any
		var err error
		switch f.read {
		case readStr:
			got, err = p.str(f.name)
		case readOptStr:
			got, err = p.optStr(f.name)
		case readJSONText:
			got, err = p.optJSONText(f.name)
		case readNumText:
			got, err = p.optNumText(f.name)
		case readBool:
			got, err = p.optBool(f.name)
		case readInt:
			got, err = p.optInt(f.name)
		case readList:
			got, err = p.list(f.name)
		case readNames:
			got, err = p.names(f.name)
		case readNullableInt, readNullableInt64:
			var n *int64
			if n, err = p.nullableInt(f.name); err == nil {
				got = n
				if f.read == readNullableInt {
					var i *int
					if n != nil {
						v := int(*n)
						i = &v
					}
					got = i
				}
			}
		}
		if err != nil {
			return err
		}
		field.Set(reflect.ValueOf(got))
	}
	return nil
}

// How a field is read.
const (
	readStr = iota
	readOptStr
	readJSONText
	readNumText
	readBool
	readInt
	readList
	readNames
	readNullableInt
	readNullableInt64
)

// boundField is a tagged field of a request struct.
type boundField struct {
	index []int
	name  string
	read  int
}

// boundFields caches each request type's fields (reflect.Type → []boundField).
var boundFields sync.Map

// fieldsOf returns t's tagged fields, embedded structs' included.
func fieldsOf(t reflect.Type) []boundField {
	if fs, ok := boundFields.Load(t); ok {
		return fs.([]boundField)
	}
	var out []boundField
	for _, sf := range reflect.VisibleFields(t) {
		tag, ok := sf.Tag.Lookup("param")
		if !ok {
			continue
		}
		name, opt, _ := strings.Cut(tag, ",")
		out = append(out, boundField{index: sf.Index, name: name, read: readerFor(t, sf, opt)})
	}
	boundFields.Store(t, out)
	return out
}

// readerFor is how a field of that type and tag option is read.
func readerFor(t reflect.Type, sf reflect.StructField, opt string) int {
	switch {
	case sf.Type == reflect.TypeFor[string]() && opt == "":
		return readStr
	case sf.Type == reflect.TypeFor[*string]() && opt == "":
		return readOptStr
	case sf.Type == reflect.TypeFor[*string]() && opt == "json":
		return readJSONText
	case sf.Type == reflect.TypeFor[*string]() && opt == "number":
		return readNumText
	case sf.Type == reflect.TypeFor[*bool]() && opt == "":
		return readBool
	case sf.Type == reflect.TypeFor[*int]() && opt == "":
		return readInt
	case sf.Type == reflect.TypeFor[[]string]() && opt == "":
		return readList
	case sf.Type == reflect.TypeFor[[]string]() && opt == "names":
		return readNames
	case sf.Type == reflect.TypeFor[*int]() && opt == "nullable":
		return readNullableInt
	case sf.Type == reflect.TypeFor[*int64]() && opt == "nullable":
		return readNullableInt64
	}
	panic(fmt.Sprintf("httpapi.bind: %s.%s (%s, %q) is not a type the binding reads", t, sf.Name, sf.Type, opt))
}

// names returns a list of names: a JSON array of strings, or comma-separated text (a form, the
// query string), each trimmed, empty items of the text dropped; nil when absent, empty (not nil)
// when sent empty.
func (p *params) names(name string) ([]string, error) {
	out := []string{}
	switch v := p.values[name].(type) {
	case nil:
		return nil, nil
	case string:
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, namesErr(name)
			}
			out = append(out, strings.TrimSpace(s))
		}
	default:
		return nil, namesErr(name)
	}
	return out, nil
}

// namesErr says what a list of names must be, naming them after the field ("events": event names).
func namesErr(name string) error {
	return errs.Field(name, "must be a list of %s names: a JSON array of strings, or comma-separated text", strings.TrimSuffix(name, "s"))
}
