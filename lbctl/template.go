package lbctl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"lbd/lbctl/tmpl"
)

// builtinTemplates print replies in poundctl's listing format (pound.md
// §3.4). "default" looks at the members of the value to tell a full
// listing, the core object, a log object, a listener, a service and a
// backend apart, as poundctl's default template does. They are written in
// poundctl's template language (package tmpl) and receive the reply as JSON
// values.
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

{{- define "default.milliseconds"}}{{printf "%.2f" (fdiv . 1000000)}}{{end -}}

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
{{- range $bno, $be = .backends}}
      {{printf "%3d" $bno}}. {{template "default.backend" $be}}
{{- end}}
     Session type: {{.session_type}}
{{- range $i, $s = .sessions}}
       {{$i}}. Session {{$s.key}} {{$s.backend}} {{$s.expire}}
{{- end}}
{{- end -}}

{{- define "default.services"}}
{{- range $sno, $svc = .}}
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

{{range $lno, $l = .listeners -}}
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

// loadTemplates returns the templates of file, or the built-in ones when
// file is "". A file stands alone, as poundctl's template file does: its
// blocks would not read their bodies if the built-ins had defined their
// names first.
func loadTemplates(file string) (*tmpl.Set, error) {
	set := tmpl.New()
	if file == "" {
		if err := set.Parse("built-in templates", builtinTemplates); err != nil {
			panic(err) // a bug in builtinTemplates, caught by the tests
		}
		return set, nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("can't open template file: %w", err)
	}
	if err := set.Parse(file, string(text)); err != nil {
		return nil, err
	}
	return set, nil
}

// errTemplateNotFound is findTemplateFile's error when no element of the
// path has the file.
var errTemplateNotFound = errors.New("not found")

// findTemplateFile locates a template file as poundctl does: a name
// starting with /, ./ or ../ is used as it is; any other is looked up in
// the colon-separated path, where a directory element is searched for
// name and a file element is used itself, and a leading ~ is the home
// directory.
func findTemplateFile(name, path, home string) (string, error) {
	if filepath.IsAbs(name) || strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") {
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
			// Missing or unreadable: poundctl goes on with the next one.
		case fi.Mode().IsRegular():
			return el, nil
		case fi.IsDir():
			cand := filepath.Join(el, name)
			if fi, err := os.Stat(cand); err == nil && fi.Mode().IsRegular() {
				return cand, nil
			}
		}
	}
	return "", fmt.Errorf("template file %s %w in %s", name, errTemplateNotFound, path)
}

// execTemplate runs the named template on a JSON value.
func execTemplate(w io.Writer, t *tmpl.Set, name string, data any) error {
	return t.Execute(w, name, data)
}

// decodeGeneric decodes a reply into template values.
func decodeGeneric(js []byte) (any, error) {
	v, err := tmpl.FromJSON(js)
	if err != nil {
		return nil, fmt.Errorf("unexpected reply: %w", err)
	}
	return v, nil
}
