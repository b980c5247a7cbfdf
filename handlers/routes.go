// Package handlers holds Countersign's HTTP surface: the pages and JSON of
// the approver PWA and the admin screens, and the mount point of the MCP
// endpoint, as Echo routes.
package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/countersign/countersign/decision"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/oauth"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/standing"
)

// Handlers carries what every handler needs; app.Open builds it once.
type Handlers struct {
	store     *models.Store
	rp        *passkey.RP
	decisions *decision.Service
	log       *slog.Logger
	baseURL   string
	origin    string // of baseURL, as browsers write it in an Origin header
	secure    bool   // cookies carry Secure and pages HSTS: the service is reached over https
	push      PushConfig
	channels  ChannelConfig
	// ceremonies caps the passkey ceremonies started without a session, per client address.
	ceremonies *addressLimiter
	// proxies are the trusted reverse proxies (TrustProxies).
	proxies  []*net.IPNet
	observer RequestObserver             // nil: nobody counts requests
	ready    func(context.Context) error // more that /readyz checks; nil: nothing more
	// live holds the live timelines each web session has open.
	live *liveStreams
	// oauth is the authorization server (ServeOAuth); nil: none.
	oauth *oauth.Server
	// registrations caps dynamic client registrations per client address.
	registrations *addressLimiter
	// clientFailures caps the failed CIBA client authentications per
	// client address.
	clientFailures *addressLimiter
	// streams are the live timelines served off net/http (package standing).
	streams *standing.Set
}

// PushConfig is what the pages need of Web Push: the VAPID public key a
// browser subscribes with, and the push service hosts allowed beside the
// browsers' own (COUNTERSIGN_PUSH_ALLOWED_HOSTS).
type PushConfig struct {
	PublicKey    string // base64url, uncompressed P-256
	AllowedHosts []string
}

// New builds the handlers for the service at baseURL.
func New(store *models.Store, rp *passkey.RP, baseURL string, push PushConfig, log *slog.Logger) *Handlers {
	u, _ := url.Parse(baseURL)
	return &Handlers{store: store, rp: rp, decisions: decision.New(store, rp), log: log, baseURL: baseURL, origin: originOf(baseURL),
		secure: u != nil && u.Scheme == "https", push: push, ceremonies: newAddressLimiter(ceremonyRate, ceremonyBurst),
		live: newLiveStreams(), streams: standing.NewSet(eventsHeartbeat, ": alive\n\n")}
}

// EndStreams ends every live timeline served off net/http and refuses new
// ones, for a shutdown: the HTTP server's Shutdown neither waits for nor
// closes them. Their pages reconnect, to another instance if need be.
func (h *Handlers) EndStreams() { h.streams.Close() }

// LiveTimelines is how many ask pages' live timelines this instance serves
// off net/http now.
func (h *Handlers) LiveTimelines() int { return h.streams.Len() }

// ContentSecurityPolicy allows only this origin's scripts, styles and
// connections: no inline script, no inline style, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; manifest-src 'self'; worker-src 'self'; font-src 'self'; " +
	"base-uri 'none'; frame-ancestors 'none'; form-action 'self'; object-src 'none'"

// Routes builds the Echo app: public pages, the signed-in person's pages,
// the admin pages, and the MCP endpoint for agents with its metadata.
func (h *Handlers) Routes(agents AgentEndpoint) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = h.errorHandler
	e.Use(h.logRequests)
	e.Use(middleware.Recover())
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy: "same-origin", ContentSecurityPolicy: ContentSecurityPolicy,
	}))
	if h.secure {
		e.Use(strictTransportSecurity)
	}
	e.Use(limitBody)
	e.Use(compressResponses)

	e.GET("/healthz", h.Health)
	e.GET("/readyz", h.Ready)
	e.Any("/mcp", echo.WrapHandler(agents))
	e.Any("/mcp/", echo.WrapHandler(mcpWithoutSlash(agents)))
	h.oauthRoutes(e)
	h.cibaRoutes(e)
	h.wellKnownRoutes(e, agents)
	h.staticRoutes(e)
	// The service worker renews its push subscription without a session or
	// a CSRF token, which it does not have: the old endpoint and its auth
	// secret prove it. So this one route is outside the web group.
	e.POST("/push/renew", h.PushRenew, h.renewLimits()...)

	web := e.Group("", h.loadSession, h.csrf)
	web.GET("/signin", h.SignInPage)
	web.POST("/signin/begin", h.SignInBegin, h.limitCeremonyStarts)
	web.POST("/signin/finish", h.SignInFinish)
	web.POST("/signout", h.SignOut)
	web.GET("/invite/:token", h.InvitePage)
	web.POST("/invite/:token/begin", h.InviteBegin, h.limitCeremonyStarts)
	web.POST("/invite/:token/finish", h.InviteFinish)
	web.POST("/invite/:token/accept/begin", h.InviteAcceptBegin)
	web.POST("/invite/:token/accept/finish", h.InviteAcceptFinish)
	web.GET("/add-device/:token", h.DeviceLinkPage)
	web.POST("/add-device/:token/begin", h.DeviceLinkBegin)
	web.POST("/add-device/:token/finish", h.DeviceLinkFinish)
	// An ask's one-time push link: the link, not a session, is the
	// authority here, for that ask alone.
	web.GET("/link/:id/:token", h.PushLinkOpen)
	web.GET("/link/:id", h.PushLinkShow)
	web.POST("/link/:id/challenge", h.PushLinkChallenge, h.limitCeremonyStarts)
	web.POST("/link/:id/decide", h.PushLinkDecide)
	web.GET("/link/:id/done", h.PushLinkDone)

	person := web.Group("", h.requirePerson)
	person.GET("/", h.Inbox)
	person.GET("/history", h.History)
	person.GET("/approvals/:id", h.ApprovalShow)
	person.GET("/approvals/:id/events", h.ApprovalEvents)
	person.GET("/approvals/:id/proof.json", h.ApprovalProof)
	person.GET("/approvals/:id/receipt", h.ApprovalReceipt)
	person.POST("/approvals/:id/challenge", h.DecisionChallenge)
	person.POST("/approvals/:id/decide", h.Decide)
	person.POST("/batch/challenge", h.BatchChallenge)
	person.POST("/batch/decide", h.BatchDecide)
	person.GET("/work", h.WorkBoard)
	person.POST("/work/items", h.WorkItemAdd)
	person.GET("/work/items/:id", h.WorkItemShow)
	person.POST("/work/items/:id/rename", h.WorkItemRename)
	person.POST("/work/items/:id/move", h.WorkItemMove)
	person.POST("/work/columns", h.WorkColumnAdd, h.requireAdmin)
	person.POST("/work/columns/:key/rename", h.WorkColumnRename, h.requireAdmin)
	person.POST("/work/columns/:key/remove", h.WorkColumnRemove, h.requireAdmin)
	person.GET("/sessions", h.Sessions)
	person.GET("/policies", h.Policies)
	person.POST("/policies/revoke", h.PolicyRevoke)
	person.POST("/policies/:id/revoke", h.WindowRevoke)
	person.GET("/devices", h.Devices)
	person.POST("/devices/authorise/begin", h.DeviceAuthoriseBegin)
	person.POST("/devices/authorise/finish", h.DeviceAuthoriseFinish)
	person.POST("/devices/begin", h.DeviceAddBegin)
	person.POST("/devices/finish", h.DeviceAddFinish)
	person.POST("/devices/link", h.DeviceLinkCreate)
	person.POST("/devices/clients/:agent/disconnect", h.DisconnectClient)
	if h.oauth != nil {
		// The consent page of an OAuth client: a person who is not signed
		// in signs in with their passkey and comes back here.
		web.GET(oauth.AuthorizePath, h.OAuthAuthorize)
		person.POST(oauth.AuthorizePath, h.OAuthConsent)
	}
	person.POST("/devices/:id/rename", h.DeviceRename)
	person.POST("/devices/:id/remove/begin", h.DeviceRemoveBegin)
	person.POST("/devices/:id/remove", h.DeviceRemove)
	person.POST("/away", h.AwaySet)
	person.POST("/away/end", h.AwayEnd)
	person.POST("/signout/everywhere", h.SignOutEverywhere)
	person.POST("/push/subscribe", h.PushSubscribe)
	person.POST("/push/unsubscribe", h.PushUnsubscribe)
	person.POST("/push/test", h.PushTest)
	person.POST("/devices/channels/:kind", h.PersonChannelSet)
	person.POST("/devices/channels/:kind/remove", h.PersonChannelRemove)
	person.POST("/devices/channels/:kind/test", h.PersonChannelTest)
	person.POST("/test-ask", h.TestAskSend)

	admin := person.Group("/admin", h.requireAdmin)
	admin.GET("", h.AdminIndex)
	admin.GET("/members", h.AdminMembers)
	admin.POST("/invites", h.AdminInviteCreate)
	admin.POST("/invites/:id/revoke", h.AdminInviteRevoke)
	admin.POST("/members/:person/role", h.AdminMemberRole)
	admin.POST("/members/:person/remove", h.AdminMemberRemove)
	admin.GET("/agents", h.AdminAgents)
	admin.POST("/agents", h.AdminAgentCreate)
	admin.POST("/agents/:name/disable", h.AdminAgentDisable)
	admin.POST("/agents/:name/delete", h.AdminAgentDelete)
	admin.POST("/agents/:name/reenable/begin", h.AdminAgentReenableBegin)
	admin.POST("/agents/:name/reenable", h.AdminAgentReenable)
	admin.GET("/runners", h.AdminRunners)
	admin.POST("/runners", h.AdminRunnerEnroll)
	admin.POST("/runners/:name/disable", h.AdminRunnerDisable)
	admin.GET("/policies", h.AdminPolicies)
	admin.GET("/rules", h.AdminRules)
	admin.POST("/rules", h.AdminRulePropose)
	admin.POST("/rules/:id/remove", h.AdminRuleRemove)
	admin.GET("/audit", h.AdminAudit)
	admin.GET("/channels", h.AdminChannels)
	admin.POST("/channels", h.AdminChannelSave)
	admin.POST("/channels/:name/remove", h.AdminChannelRemove)
	admin.POST("/channels/:name/test", h.AdminChannelTest)
	if h.oauth != nil {
		admin.GET("/ciba-clients", h.AdminCIBAClients)
		admin.POST("/ciba-clients", h.AdminCIBAClientRegister)
		admin.POST("/ciba-clients/:id/revoke", h.AdminCIBAClientRevoke)
	}
	return e
}

// mcpWithoutSlash serves /mcp/ as /mcp: hosts given the endpoint with a
// trailing slash must reach the MCP endpoint, with its Bearer challenge,
// rather than fall into the web group, whose CSRF refusal starts no OAuth
// discovery.
func mcpWithoutSlash(agents http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = "/mcp", ""
		agents.ServeHTTP(w, r2)
	})
}

// hstsMaxAge is how long a browser keeps to https once it has seen the
// service over it: two years, as the HSTS preload list asks.
const hstsMaxAge = 2 * 365 * 24 * 60 * 60

// strictTransportSecurity tells browsers to reach the service only over
// https. It is sent whenever the base URL is https, also when TLS ends at
// a proxy in front (a browser ignores it over plain http).
func strictTransportSecurity(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderStrictTransportSecurity, fmt.Sprintf("max-age=%d", hstsMaxAge))
		return next(c)
	}
}
