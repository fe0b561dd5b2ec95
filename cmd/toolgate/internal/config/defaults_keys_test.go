package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

// defaults.yaml says "Every key toolgate knows is here", and README.md sends
// readers to `toolgate config --defaults` for the full reference: every key
// of Config's sections (not the fields of list entries or map values, which
// defaults.yaml shows by example) must be in it.
func TestDefaultsNameEveryKey(t *testing.T) {
	k := koanf.New(".")
	if err := k.Load(rawbytes.Provider(defaultsYAML), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for f := range typ.Fields() {
			tag := f.Tag.Get("koanf")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			key := prefix + tag
			if !k.Exists(key) {
				missing = append(missing, key)
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() != "time" {
				walk(key+".", f.Type)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("defaults.yaml lacks keys: %s", strings.Join(missing, ", "))
	}
}
