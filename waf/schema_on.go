//go:build !coraza.disabled_operators.validateSchema

package waf

// validateSchemaBuiltIn: Coraza's @validateSchema is in this build.
const validateSchemaBuiltIn = true
