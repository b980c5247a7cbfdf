package handlers

// LocalPath exposes the redirect check to the tests of package handlers_test.
var LocalPath = localPath
