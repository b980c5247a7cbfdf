package channels

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Teams posts an Adaptive Card to a Microsoft Teams channel through its
// Workflows (incoming) webhook. The card's one action opens the ask's page:
// there is no approve or deny in Teams.
type Teams struct {
	Client *http.Client
}

// Send posts the card.
func (t *Teams) Send(ctx context.Context, out Outgoing) (string, error) {
	if out.Shared == nil {
		return "", &Permanent{Err: errors.New("teams is a shared channel")}
	}
	sec, err := SecretOf(out.Shared)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(AdaptiveCard(out))
	if err != nil {
		return "", err
	}
	res, err := post(ctx, t.Client, sec.URL, body, map[string]string{"Content-Type": "application/json"}, "the Teams webhook")
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return "", nil
}

// AdaptiveCard is the Teams message of out: a Workflows webhook takes a
// message whose attachment is the card.
func AdaptiveCard(out Outgoing) map[string]any {
	blocks := []map[string]any{{"type": "TextBlock", "text": unformatted(subject(out.Note)), "weight": "Bolder", "size": "Medium", "wrap": true}}
	for _, f := range facts(out.Note) {
		blocks = append(blocks, map[string]any{"type": "TextBlock", "text": unformatted(f), "wrap": true, "spacing": "Small"})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
		"body":    blocks,
		"actions": []map[string]any{{"type": "Action.OpenUrl", "title": linkWords(out), "url": out.Link}},
	}
	return map[string]any{"type": "message", "attachments": []map[string]any{{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}}}
}

// unformatted keeps an agent's words from formatting or linking in a card's
// markdown: the brackets of a link, and the marks of bold and italics, are
// shown as their look-alikes.
func unformatted(s string) string {
	return strings.NewReplacer("[", "［", "]", "］", "*", "∗", "_", "＿", "<", "‹", ">", "›").Replace(s)
}
