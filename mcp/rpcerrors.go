package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/countersign/countersign/requestlog"
)

// JSON-RPC error codes the endpoint answers with at the HTTP level: the
// JSON-RPC 2.0 ones, and the two server codes the TypeScript MCP SDK uses
// for a request without a session and a session that is gone.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603
	codeNoSession      = -32000
	codeUnknownSession = -32001
	// codeSessionCap refuses an initialize past a cap on open sessions
	// (openSessions): a server error of our own, in the range JSON-RPC
	// leaves to the implementation.
	codeSessionCap = -32029
)

// rpcErrors makes every refusal of the Streamable HTTP handler a JSON-RPC
// error object (with the request's id when it has one) under the same HTTP
// status, where the go-sdk answers with plain text: an unknown method, a
// batch, a body that is not JSON, a session that is gone. A request other
// than initialize without a session is refused here with -32000 and 400,
// where the SDK would start a session for it and answer with code 0.
// Successful answers and streams pass through untouched.
func rpcErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := json.RawMessage("null")
		if r.Method == http.MethodPost {
			head, err := readRPCHead(r)
			if err != nil {
				var over *http.MaxBytesError
				if errors.As(err, &over) {
					writeRPCError(w, http.StatusRequestEntityTooLarge, id, codeInvalidRequest, fmt.Sprintf("the request body is over %d bytes", over.Limit))
					return
				}
				writeRPCError(w, http.StatusBadRequest, id, codeParseError, "the request body could not be read")
				return
			}
			id = head.id()
			if head.Method == "tools/call" {
				requestlog.From(r.Context()).SetTool(head.Params.Name)
			}
			if head.Method != "" && head.Method != "initialize" && r.Header.Get("Mcp-Session-Id") == "" && !newProtocol(r) {
				writeRPCError(w, http.StatusBadRequest, id, codeNoSession, "Bad Request: no Mcp-Session-Id header; open a session with initialize first")
				return
			}
		}
		rw := &rpcErrorWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		if rw.status != 0 {
			code, msg := rpcErrorOf(rw.status, strings.TrimSpace(rw.body.String()))
			writeRPCError(w, rw.status, id, code, msg)
		}
	})
}

// rpcHead is what the endpoint reads of a JSON-RPC message before the SDK
// does: its id, its method, and the name of a tool called.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// id is the message's id, or null when it has none.
func (h rpcHead) id() json.RawMessage {
	if len(h.ID) > 0 {
		return h.ID
	}
	return json.RawMessage("null")
}

// readRPCHead reads a POST's body, gives it back to the request for the
// next reader, and returns its head: empty when the body is not one JSON
// object (a batch, or not JSON). An error is the body's, unread.
func readRPCHead(r *http.Request) (rpcHead, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return rpcHead{}, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var h rpcHead
	if json.Unmarshal(body, &h) != nil {
		return rpcHead{}, nil
	}
	return h, nil
}

// newProtocol says whether a request speaks a protocol version the SDK
// refuses itself, already with a JSON-RPC error (2026-07-28 on, which has
// no sessions).
func newProtocol(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v != "" && v >= "2026-07-28"
}

// rpcErrorOf classifies a plain-text refusal of the SDK.
func rpcErrorOf(status int, text string) (int, string) {
	switch {
	case status == http.StatusNotFound:
		return codeUnknownSession, "Session not found: it ended or never was; open a new one with initialize"
	case status >= 500:
		return codeInternalError, text
	case strings.Contains(text, "not handled") || strings.Contains(text, "unsupported"):
		return codeMethodNotFound, "Method not found: " + text
	case strings.Contains(text, "malformed") || strings.Contains(text, "unmarshal"):
		return codeParseError, "Parse error: " + text
	}
	return codeInvalidRequest, text
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	writeRPCErrorData(w, status, id, code, msg, nil)
}

// writeRPCErrorData answers a JSON-RPC error whose data (when not nil) says
// more, for a client to read rather than parse the message.
func writeRPCErrorData(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	rpcErr := map[string]any{"code": code, "message": msg}
	if data != nil {
		rpcErr["data"] = data
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": rpcErr})
}

// rpcErrorWriter holds back a plain-text error answer (http.Error's) so
// rpcErrors can answer it as JSON-RPC; everything else goes straight through.
type rpcErrorWriter struct {
	http.ResponseWriter
	status int // of the held-back answer; 0 while none
	body   bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on a flush of a stream.
func (w *rpcErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
