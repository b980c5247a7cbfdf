// The page script's redirect check, the same rule as the server's
// isLocalPath (handlers/render.go); both are held to
// handlers/testdata/redirects.json (web/test/redirect.test.mjs).

// How many rounds of percent-decoding the check looks through; a value still
// changing after them is refused.
const maxUnescapes = 4;

// A path of this site: one "/", then neither "/" nor "\", and only printable
// ASCII other than "\" (no control character, space or non-ASCII character).
const plainPath = /^\/(?![/\\])[\x21-\x5b\x5d-\x7e]*$/;

/**
 * localPath returns p when it is a path of this site by every reading a
 * browser might give it, through up to four rounds of percent-decoding, and
 * "/" otherwise.
 */
export function localPath(p) {
  if (typeof p !== "string") return "/";
  let s = p;
  for (let i = 0; i < maxUnescapes; i++) {
    if (!plainPath.test(s)) return "/";
    let d;
    try {
      d = decodeURIComponent(s);
    } catch {
      return "/";
    }
    if (d === s) return p;
    s = d;
  }
  return "/";
}
