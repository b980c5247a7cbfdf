// Package static embeds the built front end: CSS, the page script, the
// service worker, the web app manifest, icons and the offline page.
package static

import "embed"

// FS holds every file the service serves from this folder.
//
//go:embed app.css app.js sw.js manifest.webmanifest offline.html icons
var FS embed.FS
