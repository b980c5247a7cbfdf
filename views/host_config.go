package views

import "encoding/json"

// HostConfig is one MCP host's paste-ready configuration for an agent's
// token: where it goes, and the text to paste there.
type HostConfig struct {
	Host   string // the host, as people know it
	Where  string // where the text goes
	Text   string
	TestID string
}

// HostConfigs are the configurations of the common MCP hosts for the agent
// token at the MCP endpoint mcpURL: a one-line command where the host has
// one, and a JSON mcpServers entry otherwise. The token is in every one of
// them: they are shown once, like the token.
func HostConfigs(mcpURL, token string) []HostConfig {
	bearer := "Bearer " + token
	direct := map[string]any{"mcpServers": map[string]any{"countersign": map[string]any{
		"url": mcpURL, "headers": map[string]string{"Authorization": bearer},
	}}}
	// mcp-remote reads the header from its environment: npx splits an
	// argument with a space in it on some systems.
	remote := map[string]any{"mcpServers": map[string]any{"countersign": map[string]any{
		"command": "npx", "args": []string{"-y", "mcp-remote", mcpURL, "--header", "Authorization:${COUNTERSIGN_AUTH}"},
		"env": map[string]string{"COUNTERSIGN_AUTH": bearer},
	}}}
	return []HostConfig{
		{Host: "Claude Code", Where: "Run in a terminal:", TestID: "config-claude-code",
			Text: "claude mcp add --transport http countersign " + shellQuote(mcpURL) + " --header " + shellQuote("Authorization: "+bearer)},
		{Host: "Cursor, Windsurf and other hosts that speak streamable HTTP", Where: "Add to the host's mcp.json (Cursor: ~/.cursor/mcp.json):",
			TestID: "config-streamable-http", Text: indentJSON(direct)},
		{Host: "Claude Desktop", Where: "Add to claude_desktop_config.json (Settings → Developer → Edit Config); it runs mcp-remote with Node:",
			TestID: "config-mcp-remote", Text: indentJSON(remote)},
	}
}

func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "" // maps of strings always marshal
	}
	return string(b)
}
