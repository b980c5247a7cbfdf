package core

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// InsertShape is what an insert of one model writes: every column gorm's
// Create would write but an auto-increment key, read from the model once, so
// that a column added to the model is written here too.
type InsertShape struct {
	Columns string // the column list
	fields  []*schema.Field
	casts   []string // each placeholder's cast, so that it type-checks in INSERT … SELECT
}

// ShapeOf reads the InsertShape of model from its gorm schema.
func ShapeOf(db *gorm.DB, model any) (InsertShape, error) {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(model); err != nil {
		return InsertShape{}, fmt.Errorf("read the model of %T: %w", model, err)
	}
	var sh InsertShape
	var names []string
	for _, f := range stmt.Schema.Fields {
		if f.DBName == "" || !f.Creatable || f.PrimaryKey && f.AutoIncrement {
			continue
		}
		names = append(names, f.DBName)
		sh.fields = append(sh.fields, f)
		sh.casts = append(sh.casts, postgresType(f))
	}
	sh.Columns = strings.Join(names, ", ")
	return sh, nil
}

// Values returns the placeholders of row's values, each added through arg.
func (sh InsertShape) Values(row any, arg func(v any, cast string) string) string {
	v := reflect.ValueOf(row)
	var b strings.Builder
	for i, f := range sh.fields {
		if i > 0 {
			b.WriteString(", ")
		}
		value, _ := f.ValueOf(context.Background(), v)
		b.WriteString(arg(value, sh.casts[i]))
	}
	return b.String()
}

// postgresType is the type a field's placeholder is cast to.
func postgresType(f *schema.Field) string {
	t := f.FieldType
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeOf(time.Time{}):
		return "timestamptz"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "bigint"
	default:
		return "text"
	}
}
