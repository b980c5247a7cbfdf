package views

import "strings"

// PushEndpoints are the hex SHA-256 of the person's push endpoints, space
// separated: the page script tells by them whether this browser's
// subscription is one of them, without the page showing endpoints.
func (v InboxView) PushEndpoints() string {
	sums := make([]string, len(v.Push.Devices))
	for i, d := range v.Push.Devices {
		sums[i] = d.EndpointSHA256
	}
	return strings.Join(sums, " ")
}
