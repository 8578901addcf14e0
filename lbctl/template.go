package lbctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"text/template"
)

// builtinTemplates print replies in poundctl's listing format (pound.md
// §3.4). "default" looks at the members of the value to tell a full
// listing, the core object, a log object, a listener, a service and a
// backend apart, as poundctl's default template does. Templates receive the
// reply as generic JSON: objects are map[string]any, integers int64.
const builtinTemplates = `
{{- define "default.core" -}}
Server time: {{.timestamp}}
Pound version: {{.version}}
PID: {{.pid}}
{{with .workers -}}
Workers:
  Min:     {{.min}}
  Max:     {{.max}}
  Current: {{.count}}
  Active:  {{.active}}
Idle timeout: {{.timeout}}
{{end -}}
{{end -}}

{{- define "default.milliseconds"}}{{printf "%.2f" (div . 1000000)}}{{end -}}

{{- define "default.backend" -}}
{{.type}}{{if exists . "weight"}} ({{.weight}}){{end}} {{/**/ -}}
{{if eq .type "backend"}}{{.protocol}} {{.address}} {{.priority}} {{if .alive}}alive{{else}}dead{{end}}
{{- else if eq .type "redirect"}}{{.code}} {{or .url "-"}}{{end}} {{if .enabled}}active{{else}}disabled{{end}}
{{- if exists . "expire"}} [expires {{.expire}}]{{end}}
{{- with .stats}} - {{.request_count}} requests
{{- if gt .request_count 0}}, {{template "default.milliseconds" .request_time_avg}} ms avg, {{template "default.milliseconds" .request_time_stddev}} stddev{{end}}
{{- end}}
{{- end -}}

{{- define "default.service" -}}
Service {{if .name}}"{{.name}}" {{end}}{{if .enabled}}active{{else}}disabled{{end}}
{{- range $bno, $be := .backends}}
      {{printf "%3d" $bno}}. {{template "default.backend" $be}}
{{- end}}
     Session type: {{.session_type}}
{{- range $i, $s := .sessions}}
       {{$i}}. Session {{$s.key}} {{$s.backend}} {{$s.expire}}
{{- end}}
{{- end -}}

{{- define "default.services"}}
{{- range $sno, $svc := .}}
   {{printf "%3d" $sno}}. {{template "default.service" $svc}}
{{- end}}
{{- end -}}

{{- define "default.listener" -}}
Listener {{if .name}}"{{.name}}" {{end}}{{.protocol}}://{{.address}} {{if .enabled}}enabled{{else}}disabled{{end}}
{{- template "default.services" .services}}
{{- end -}}

{{- define "default.all" -}}
{{with .core}}{{template "default.core" .}}{{end}}
Listeners:

{{range $lno, $l := .listeners -}}
{{printf "%3d" $lno}}. {{template "default.listener" $l}}
{{end -}}
{{if .services}}
Global services:
{{template "default.services" .services}}
{{end -}}
{{end -}}

{{- define "default.log" -}}
Global log level: {{or .global "null"}}
{{if exists . "listener_name" -}}
Listener "{{.listener_name}}" log level: {{or .level "(global)"}}
{{else if exists . "listener_index" -}}
Listener {{.listener_index}} log level: {{or .level "(global)"}}
{{end -}}
{{end -}}

{{- define "default" -}}
{{if exists . "listeners"}}{{template "default.all" .}}
{{- else if exists . "workers"}}{{template "default.core" .}}
{{- else if exists . "global"}}{{template "default.log" .}}
{{- else if exists . "services"}}{{template "default.listener" .}}
{{else if exists . "backends"}}{{template "default.service" .}}
{{else}}{{template "default.backend" .}}
{{end -}}
{{end -}}
`

// templateFuncs are the functions poundctl's template language adds to Go's
// (poundctl.tmpl(5)): exists, typeof, arithmetic, and a len that treats
// JSON null as empty.
var templateFuncs = template.FuncMap{
	"exists": func(v any, key string) bool {
		m, ok := v.(map[string]any)
		if ok {
			_, ok = m[key]
		}
		return ok
	},
	"typeof": typeOf,
	"len": func(v any) int {
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
			return rv.Len()
		}
		return 0
	},
	"add":  arith(func(a, b float64) float64 { return a + b }, true),
	"sub":  arith(func(a, b float64) float64 { return a - b }, true),
	"mul":  arith(func(a, b float64) float64 { return a * b }, true),
	"div":  arith(func(a, b float64) float64 { return a / b }, false),
	"fdiv": arith(func(a, b float64) float64 { return a / b }, false),
}

// typeOf names the JSON type of a value.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case int64, float64, int:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// arith builds a two-operand arithmetic function. With keepInt the result
// of two integers stays an integer, so "add $i 1" prints as 1, not 1.0.
func arith(op func(a, b float64) float64, keepInt bool) func(a, b any) (any, error) {
	return func(a, b any) (any, error) {
		x, xi, err := number(a)
		if err != nil {
			return nil, err
		}
		y, yi, err := number(b)
		if err != nil {
			return nil, err
		}
		r := op(x, y)
		if keepInt && xi && yi {
			return int64(r), nil
		}
		return r, nil
	}
}

// number converts a template operand to float64, reporting integers.
func number(v any) (float64, bool, error) {
	switch n := v.(type) {
	case int:
		return float64(n), true, nil
	case int64:
		return float64(n), true, nil
	case float64:
		return n, false, nil
	case nil:
		return 0, true, nil
	}
	return 0, false, fmt.Errorf("not a number: %v", v)
}

// loadTemplates returns the built-in templates with the definitions of
// file (if any) added, which may redefine them.
func loadTemplates(file string) (*template.Template, error) {
	t := template.Must(template.New("lbctl").Funcs(templateFuncs).Parse(builtinTemplates))
	if file == "" {
		return t, nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("can't open template file: %w", err)
	}
	if _, err := t.New(file).Parse(string(text)); err != nil {
		return nil, err
	}
	return t, nil
}

// findTemplateFile locates ~/.poundctl's TemplateFile name as poundctl
// does: a name starting with /, ./ or ../ is used as it is; any other is
// looked up in the colon-separated path, where a directory element is
// searched for name and a file element is used itself, and a leading ~ is
// the home directory. Without a path the name is used as it is.
func findTemplateFile(name, path, home string) (string, error) {
	if path == "" || filepath.IsAbs(name) || strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") {
		return name, nil
	}
	for _, el := range strings.Split(path, ":") {
		if el == "" {
			continue
		}
		if strings.HasPrefix(el, "~") {
			el = filepath.Join(home, el[1:])
		}
		fi, err := os.Stat(el)
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			return el, nil
		case fi.IsDir():
			cand := filepath.Join(el, name)
			if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() {
				return cand, nil
			}
		}
	}
	return "", fmt.Errorf("template file %s not found in %s", name, path)
}

// execTemplate runs the named template on a JSON value.
func execTemplate(w io.Writer, t *template.Template, name string, data any) error {
	if t.Lookup(name) == nil {
		return fmt.Errorf("template %s not defined", name)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// decodeGeneric decodes JSON into maps, slices and scalars, integers as
// int64 (so pids and counters print in full and compare with gt/lt) and
// other numbers as float64.
func decodeGeneric(js []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("unexpected reply: %w", err)
	}
	return numbers(v), nil
}

// numbers replaces json.Number values in place.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}
