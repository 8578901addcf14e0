package waf

import (
	"errors"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

// lbd refuses Coraza's @validateSchema (JSON bodies against a JSON Schema
// file) in every build. The Makefile builds lbd without it (the tag
// coraza.disabled_operators.validateSchema): the JSON, YAML and
// translation libraries only it uses are ~2 MB of the binary
// (bench/RESULTS.md §42), for an operator that neither the Core Rule Set
// nor libmodsecurity rule sets use (libmodsecurity's operator of that name
// validates XML against an XSD, which Coraza's does not). lbd's own
// operator under the name makes a rule using it fail the same way with or
// without the tag, so the tag changes the binary's size and nothing a
// configuration does.
const validateSchemaOperator = "validateSchema"

var errValidateSchema = errors.New("@validateSchema is not supported by lbd (see WafRules in lbd.cfg(5))")

func init() {
	plugins.RegisterOperator(validateSchemaOperator, refuseValidateSchema)
}

func refuseValidateSchema(plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	return nil, errValidateSchema
}
