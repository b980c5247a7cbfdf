package channels

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"
)

// SMTP is where email goes: a server, how the connection is secured, the
// login, and the From address.
type SMTP struct {
	Host     string
	Port     int
	Security string // starttls (required, the default), tls (implicit, port 465), or none (a loopback server only)
	Username string
	Password string
	From     string // "Countersign <approvals@example.com>"
	// RootCAs, when set, are the only authorities the server's certificate
	// may chain to (a mail server with a private CA); nil: the system's.
	RootCAs *x509.CertPool
}

// ReadCA reads a PEM file of certificate authorities for SMTP.RootCAs.
func ReadCA(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// ParseSMTP reads COUNTERSIGN_SMTP_URL: smtp://[user:password@]host[:port]
// (STARTTLS required, port 587), smtps://… (TLS from the first byte, port
// 465), or smtp://host:port?security=none, refused unless host is a
// loopback address (a test server on the same machine).
func ParseSMTP(raw, from string) (*SMTP, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" {
		return nil, errors.New("must be smtp://[user:password@]host[:port] or smtps://…")
	}
	s := &SMTP{Host: u.Hostname(), From: from}
	switch u.Scheme {
	case "smtp":
		s.Security, s.Port = "starttls", 587
	case "smtps":
		s.Security, s.Port = "tls", 465
	default:
		return nil, fmt.Errorf("scheme %q: must be smtp (STARTTLS) or smtps (TLS)", u.Scheme)
	}
	if p := u.Port(); p != "" {
		if s.Port, err = strconv.Atoi(p); err != nil || s.Port < 1 || s.Port > 65535 {
			return nil, fmt.Errorf("port %q is not a port", p)
		}
	}
	for k, v := range u.Query() {
		if k != "security" || len(v) != 1 || v[0] != "none" {
			return nil, fmt.Errorf("unknown setting %s=%s: the only one is security=none", k, strings.Join(v, ","))
		}
		if ip := net.ParseIP(s.Host); s.Host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, errors.New("security=none sends mail and the password in the clear: only to a server on this machine (localhost, 127.0.0.1)")
		}
		s.Security = "none"
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	if from == "" {
		return nil, errors.New("COUNTERSIGN_SMTP_FROM is required with it: the From address, like Countersign <approvals@example.com>")
	}
	if err := mail.NewMsg().From(from); err != nil {
		return nil, fmt.Errorf("COUNTERSIGN_SMTP_FROM %q: %w", from, err)
	}
	return s, nil
}

// Email sends messages over SMTP with STARTTLS or TLS and authentication.
type Email struct {
	SMTP    *SMTP
	Timeout time.Duration
}

func (e *Email) client() (*mail.Client, error) {
	opts := []mail.Option{mail.WithPort(e.SMTP.Port), mail.WithTimeout(max(e.Timeout, 10*time.Second)),
		mail.WithTLSConfig(&tls.Config{ServerName: e.SMTP.Host, RootCAs: e.SMTP.RootCAs, MinVersion: tls.VersionTLS12})}
	switch e.SMTP.Security {
	case "tls":
		opts = append(opts, mail.WithSSL())
	case "none":
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	}
	if e.SMTP.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover), mail.WithUsername(e.SMTP.Username), mail.WithPassword(e.SMTP.Password))
	}
	return mail.NewClient(e.SMTP.Host, opts...)
}

// Send mails the message to the person. Its Message-ID is made from the
// message's key: a message sent again after a crash is the same message.
func (e *Email) Send(ctx context.Context, out Outgoing) (string, error) {
	if out.Message.Shared() {
		return "", &Permanent{Err: errors.New("email goes to a person, not to a shared channel")}
	}
	m := mail.NewMsg()
	if err := m.From(e.SMTP.From); err != nil {
		return "", &Permanent{Err: fmt.Errorf("from address: %w", err)}
	}
	if err := m.To(out.Address); err != nil {
		return "", &Permanent{Err: fmt.Errorf("to address: %w", err)}
	}
	m.Subject("[Countersign] " + subject(out.Note))
	sum := sha256.Sum256([]byte(out.Message.Key))
	domain := "countersign.invalid"
	if at := strings.LastIndex(e.SMTP.From, "@"); at >= 0 {
		domain = strings.Trim(e.SMTP.From[at+1:], "> ")
	}
	id := hex.EncodeToString(sum[:16]) + "@" + domain
	m.SetMessageIDWithValue(id)
	m.SetGenHeader(mail.HeaderXMailer, "Countersign")
	m.SetGenHeader("Auto-Submitted", "auto-generated")
	text, html, err := emailBodies(out)
	if err != nil {
		return "", err
	}
	m.SetBodyString(mail.TypeTextPlain, text)
	m.AddAlternativeString(mail.TypeTextHTML, html)
	c, err := e.client()
	if err != nil {
		return "", &Permanent{Err: err}
	}
	if err := c.DialAndSendWithContext(ctx, m); err != nil {
		return "", smtpRefusal(err)
	}
	return "<" + id + ">", nil
}

// smtpRefusal sorts an SMTP failure: a 5xx answer is permanent, a 4xx or a
// connection that failed is for now.
func smtpRefusal(err error) error {
	var tp *textproto.Error
	if errors.As(err, &tp) && tp.Code >= 500 {
		return &Permanent{Err: err}
	}
	var se *mail.SendError
	if errors.As(err, &se) && !se.IsTemp() && se.ErrorCode() >= 500 {
		return &Permanent{Err: err}
	}
	return &RetryAfter{Err: err}
}

var emailHTML = template.Must(template.New("email").Parse(`<!doctype html>
<html><body style="font-family: system-ui, sans-serif; line-height: 1.4">
<p style="font-size: 1.15em"><strong>{{.Subject}}</strong></p>
{{range .Facts}}<p style="margin: .2em 0">{{.}}</p>{{end}}
<p style="margin-top: 1.2em"><a href="{{.Link}}">{{.LinkWords}}</a></p>
<p style="color: #666; font-size: .9em">Countersign never takes an answer by email: every answer is a passkey signature on the service.</p>
</body></html>`))

// emailBodies are the plain and HTML bodies of a message.
func emailBodies(out Outgoing) (string, string, error) {
	var text strings.Builder
	text.WriteString(subject(out.Note) + "\n\n")
	for _, f := range facts(out.Note) {
		text.WriteString(f + "\n")
	}
	text.WriteString("\n" + linkWords(out) + ":\n" + out.Link + "\n\n")
	text.WriteString("Countersign never takes an answer by email: every answer is a passkey signature on the service.\n")
	var html bytes.Buffer
	err := emailHTML.Execute(&html, map[string]any{"Subject": subject(out.Note), "Facts": facts(out.Note), "Link": template.URL(out.Link), "LinkWords": linkWords(out)})
	return text.String(), html.String(), err
}
