package handlers

// LocalPath exposes the redirect check to the tests of package handlers_test.
var LocalPath = localPath

// CompressResponses exposes the compressing middleware to the tests of
// package handlers_test, for handlers the service does not have (one that
// streams a page, one that fails before writing).
var CompressResponses = compressResponses
