//go:build coraza.disabled_operators.validateSchema

package waf

// validateSchemaBuiltIn: Coraza's @validateSchema is left out of this
// build (the Makefile's tag coraza.disabled_operators.validateSchema).
const validateSchemaBuiltIn = false
