package app

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestTheReadmeDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		def := "empty"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		row := "| `" + s.Name + "` | " + def + " |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no configuration row starting %q", row)
		}
	}
}

func TestDefaultsLoad(t *testing.T) {
	c, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatalf("the defaults do not load: %v", err)
	}
	if c.Addr != ":8080" || c.Data != "./data" || c.DatabaseURL != "" || c.BaseURL != "http://localhost:8080" ||
		c.AskRate.String() != "60/m" || c.AskBurst != 20 || c.PushCap.N != 20 || c.PushContact != "mailto:countersign@localhost" ||
		c.SessionIdle != 12*time.Hour {
		t.Errorf("defaults = %+v", c)
	}
}
