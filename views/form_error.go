package views

import "slices"

// errorAt is the refusal msg when it is about field (at names the field a
// refusal is about, models.FieldOf): the form shows it at that field.
func errorAt(msg, at, field string) string {
	if at != field {
		return ""
	}
	return msg
}

// looseError is the refusal msg when it is about none of the form's fields:
// the page shows it above the form.
func looseError(msg, at string, fields ...string) string {
	if slices.Contains(fields, at) {
		return ""
	}
	return msg
}

// invalid is the aria-invalid of a field that a refusal is about.
func invalid(msg, at, field string) string {
	if errorAt(msg, at, field) != "" {
		return "true"
	}
	return "false"
}

// ruleFormFields are the rule form's fields a refusal can be about; a
// refusal about the pool shows above the pool's fields.
var ruleFormFields = []string{"id", "name", "kinds", "effects", "servers", "tools", "requesters", "min_priority", "count",
	"group", "people", "apply_from", "escalate_after", "remind_every", "pool"}
