// Package models is the one way into Countersign's data: the Store that
// puts the rooms of the storage tree together, and the acts that reach
// across rooms (filing an ask, deciding it, disabling an agent, removing a
// member, member and rule changes).
// It stands on every room; no room imports it (docs/architecture.md).
package models

import (
	"sync"
	"time"

	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/audit"
	"github.com/countersign/countersign/models/core"
	"github.com/countersign/countersign/models/grants"
	"github.com/countersign/countersign/models/oidc"
	"github.com/countersign/countersign/models/ops"
	"github.com/countersign/countersign/models/outbox"
	"github.com/countersign/countersign/models/people"
	"github.com/countersign/countersign/models/policy"
	"github.com/countersign/countersign/models/rules"
	"github.com/countersign/countersign/models/runners"
	"github.com/countersign/countersign/models/work"
	"gorm.io/gorm"
)

// Store is the one way into Countersign's data. Handlers and MCP tools call its
// methods; none of them writes a status itself. It puts the rooms together:
// each room's methods are the Store's, and filing and deciding, which reach
// across rooms, live here.
type Store struct {
	*core.Store
	*ops.Upkeep
	*asks.Lifecycle
	*outbox.Queue
	*people.Directory
	*grants.Issuer
	*oidc.Provider
	*rules.Book
	*runners.Registry
	*work.Tracker
	*policy.Policies
	*audit.Trail
	// askTTL is an ask's life unless its kind sets a shorter one.
	askTTL time.Duration
	// approvalShape and eventShape are the inserts fileInOneStatement
	// writes, read from the models once.
	approvalShape, eventShape func() (core.InsertShape, error)
}

// NewStore wraps an opened, migrated database. askTTL is an ask's life unless
// its kind sets a shorter one.
func NewStore(db *gorm.DB, dialect core.Dialect, askTTL time.Duration) *Store {
	c := core.New(db, dialect)
	al := asks.NewLifecycle(c)
	ou := outbox.NewQueue(c, al)
	pe := people.NewDirectory(c, al, ou)
	s := &Store{
		Store: c, Upkeep: ops.NewUpkeep(c), Lifecycle: al, Queue: ou, Directory: pe,
		Issuer: grants.NewIssuer(c, al, pe), Provider: oidc.NewProvider(c), Book: rules.NewBook(c, al, ou, pe), Registry: runners.NewRegistry(c, al),
		Tracker: work.NewTracker(c, al), Policies: policy.NewPolicies(c, al), Trail: audit.NewTrail(c),
		askTTL: askTTL,
	}
	al.OnMove(ou.PushesOnMove)
	al.OnMove(s.Provider.RequestsOnMove)
	s.approvalShape = sync.OnceValues(func() (core.InsertShape, error) { return core.ShapeOf(db, &asks.Approval{}) })
	s.eventShape = sync.OnceValues(func() (core.InsertShape, error) { return core.ShapeOf(db, &asks.TimelineEvent{}) })
	return s
}
