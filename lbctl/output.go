package lbctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Output modes, chosen once per invocation:
//   - -j prints the server's reply as it came (re-indented with -i N);
//   - -t FILE or -T NAME, and always when invoked as poundctl, run a
//     template (built-in "default" unless -T names another);
//   - otherwise lbctl prints a table (listings) or the default template
//     (core, log).

// useTemplate reports whether replies go through a template rather than a
// table.
func (r *runner) useTemplate() bool {
	return r.prog == "poundctl" || r.opt.templateExplicit
}

// printJSON prints a raw reply for -j, indented by -i spaces when given.
func (r *runner) printJSON(reply []byte) error {
	out := bytes.TrimRight(reply, "\r\n")
	if r.opt.indent > 0 {
		var b bytes.Buffer
		if err := json.Indent(&b, out, "", strings.Repeat(" ", r.opt.indent)); err != nil {
			return fmt.Errorf("unexpected reply: %w", err)
		}
		out = b.Bytes()
	}
	_, err := fmt.Fprintf(r.env.Stdout, "%s\n", out)
	return err
}

// printTemplate runs the selected template on a JSON value.
func (r *runner) printTemplate(data any) error {
	file, name, err := r.templateChoice()
	if err != nil {
		return err
	}
	t, err := loadTemplates(file)
	if err != nil {
		return err
	}
	return execTemplate(r.env.Stdout, t, name, data)
}

// defaultTemplateFile is the template file poundctl reads when neither -t
// nor TemplateFile names one; lbd ships none, so without one of the user's
// the built-in templates serve.
const defaultTemplateFile = "poundctl.tmpl"

// defaultTemplatePath is where it is looked up unless $POUND_TMPL_PATH or
// TemplatePath says otherwise: poundctl's per-user file, then lbd's data
// directories.
const defaultTemplatePath = "~/.poundctl.tmpl:/usr/local/share/lbd:/usr/share/lbd"

// templatePath is the template search path: $POUND_TMPL_PATH (even when
// empty), else ~/.poundctl's TemplatePath, else the default.
func (r *runner) templatePath(cc *ctlConfig) string {
	if p, ok := r.env.LookupEnv("POUND_TMPL_PATH"); ok {
		return p
	}
	if cc.tmplPath != "" {
		return cc.tmplPath
	}
	return defaultTemplatePath
}

// templateChoice returns the template file ("" for the built-in
// templates) and the template name. The file is -t FILE, read as given;
// else ~/.poundctl's TemplateFile, which must be found in the search path
// unless it starts with /, ./ or ../; else poundctl.tmpl if the search
// path has one. The name is -T, else TemplateName, else "default". The
// configuration file's settings do not make lbctl print templates instead
// of tables; they only fill in what -t and -T leave open.
func (r *runner) templateChoice() (file, name string, err error) {
	cc, err := r.ctlConf()
	if err != nil {
		return "", "", err
	}
	home := r.env.Getenv("HOME")
	switch {
	case r.opt.tmplFile != "":
		file = r.opt.tmplFile
	case cc.tmplFile != "":
		if file, err = findTemplateFile(cc.tmplFile, r.templatePath(cc), home); err != nil {
			return "", "", err
		}
	default:
		file, err = findTemplateFile(defaultTemplateFile, r.templatePath(cc), home)
		if errors.Is(err, errTemplateNotFound) {
			file, err = "", nil
		}
		if err != nil {
			return "", "", err
		}
	}
	name = r.opt.tmplName
	if name == "" {
		name = cc.tmplName
	}
	if name == "" {
		name = "default"
	}
	return file, name, nil
}

// printReply prints a reply that is not a listing (core, log): raw, or
// through the template, decoded as generic JSON.
func (r *runner) printReply(reply []byte) error {
	if r.opt.json {
		return r.printJSON(reply)
	}
	if r.opt.quiet {
		return nil
	}
	data, err := decodeGeneric(reply)
	if err != nil {
		return err
	}
	return r.printTemplate(data)
}

// printObject prints a listing: raw, through a template, as paths only
// (--quiet), or as a table. The listing goes through one buffer, written
// when it is complete: a table of 10,000 services and 20,000 backends
// was 750,000 write calls, most of lbctl's own time (issue 36).
func (r *runner) printObject(cn *conn, o *object, reply []byte) error {
	stdout := r.env.Stdout
	w := bufio.NewWriterSize(stdout, 64<<10)
	r.env.Stdout = w
	defer func() { r.env.Stdout = stdout }()
	err := r.printListing(cn, o, reply)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

func (r *runner) printListing(cn *conn, o *object, reply []byte) error {
	switch {
	case r.opt.json:
		return r.printJSON(reply)
	case r.opt.quiet:
		for _, row := range o.rows() {
			fmt.Fprintln(r.env.Stdout, row.path)
		}
		return nil
	case r.useTemplate():
		data, err := r.templateData(cn, o, reply)
		if err != nil {
			return err
		}
		return r.printTemplate(data)
	}
	if cn.dialect == dialectPound && o.lacksRequests() {
		addMetrics(cn, o)
	}
	if err := writeTable(r.env.Stdout, cn.dialect, o.rows()); err != nil {
		return err
	}
	if err := writeLimits(r.env.Stdout, o); err != nil {
		return err
	}
	if o.doc != nil {
		listCluster(r.env.Stdout, cn)
	}
	return nil
}

// templateData is what templates see: Pound's reply verbatim (every member
// it has), or the zproxy object converted to Pound's shape.
func (r *runner) templateData(cn *conn, o *object, reply []byte) (any, error) {
	if cn.dialect == dialectPound {
		return decodeGeneric(reply)
	}
	return o.templateData()
}
