package config

import "sort"

// Directive is one keyword the configuration loader recognises in one
// section. The list exists so documentation (man/lbd.cfg.5) can be checked
// against the parser and cannot drift from it.
type Directive struct {
	// Section is where the keyword may appear: "global", "control",
	// "listener" (ListenHTTP and ListenHTTPS), "https" (ListenHTTPS only),
	// "service", "match" (conditions inside Match and Not), "session",
	// "backend" (BackEnd, Emergency and named Backend), "resolver", "lua",
	// "tunnel", "tunnel backend" (Backend and Emergency in a Tunnel),
	// "cluster" (lbd's Cluster section), "acme" (lbd's ACMEAccount),
	// "jwtauth", "apikeyauth", "forwardauth" (lbd's edge authentication
	// blocks), or
	// "any" for the parser's own Include.
	Section string
	// Name is the canonical spelling. Alternate spellings registered as
	// aliases (Anonymize, HeadRequire, ...) are reported in lower case,
	// because the tables keep only the lower-cased key for them; keywords
	// are case-insensitive anyway.
	Name string
	// Ignored marks keywords lbd accepts with the warning `"X" is not
	// supported` and otherwise ignores.
	Ignored bool
	// Deprecated is Pound 4's deprecation hint ("use "X" instead"), shown
	// with -W warn-deprecated; "" when the keyword is current.
	Deprecated string
}

// Directives returns every keyword of every section, sorted by section
// and then by lower-cased name. Each call builds a fresh slice.
func Directives() []Directive {
	var out []Directive
	out = append(out, Directive{Section: "any", Name: "Include"}) // expanded by the parser
	out = appendTable(out, "global", globalTable, globalUnsupported)
	out = appendTable(out, "control", controlTable, nil)
	out = appendTable(out, "listener", httpTable, listenerUnsupported)
	https := table[*Listener]{}
	for k, d := range httpsTable {
		if httpTable[k] == nil {
			https[k] = d
		}
	}
	out = appendTable(out, "https", https, nil)
	out = appendTable(out, "service", svcTable, serviceUnsupported)
	out = appendTable(out, "match", condTable, condUnsupported)
	out = appendTable(out, "session", sessionTable, nil)
	out = appendTable(out, "backend", beTable, backendUnsupported)
	out = appendTable(out, "resolver", resolverTable, nil)
	out = appendTable(out, "cluster", clusterTable, nil)
	out = appendTable(out, "acme", acmeTable, nil)
	out = appendTable(out, "lua", luaTable, nil)
	out = appendTable(out, "tunnel", tunnelTable, nil)
	out = appendTable(out, "tunnel backend", tunnelBackendTable, nil)
	out = appendTable(out, "jwtauth", jwtAuthTable, nil)
	out = appendTable(out, "apikeyauth", apiKeyAuthTable, nil)
	out = appendTable(out, "forwardauth", forwardAuthTable, nil)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Section != out[j].Section {
			return out[i].Section < out[j].Section
		}
		return lower(out[i].Name) < lower(out[j].Name)
	})
	return out
}

// appendTable adds the keywords of one section table and its list of
// accepted-but-ignored keywords.
func appendTable[T any](out []Directive, section string, t table[T], ignored map[string]string) []Directive {
	for key, d := range t {
		name := d.name
		if lower(name) != key {
			name = key // an alias: the table keeps the target's spelling
		}
		out = append(out, Directive{Section: section, Name: name, Deprecated: d.depr})
	}
	for key, canon := range ignored {
		if t[key] == nil {
			out = append(out, Directive{Section: section, Name: canon, Ignored: true})
		}
	}
	return out
}
