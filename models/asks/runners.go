package asks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/proof"
	"gorm.io/gorm"
)

// accountEvent appends, inside tx, an event of the account that is about no
// approval to its audit log, at time at; data, when not nil, is kept with it
// as JSON.
func (s *Lifecycle) AccountEvent(tx *gorm.DB, at time.Time, accountID, actorKind, actor, step, note string, data any) error {
	ev := &TimelineEvent{AccountID: accountID, At: at, ActorKind: actorKind, Actor: actor, Step: step, Note: note}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("event data: %w", err)
		}
		text := string(b)
		ev.Data = &text
	}
	if err := tx.Table("events").Create(ev).Error; err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	return nil
}

// RunnerSignature is the runner's signature a timeline event carries, or nil.
func (e *TimelineEvent) RunnerSignature() *proof.RunnerReport {
	if e.ActorKind != ActorRunner || e.Data == nil {
		return nil
	}
	var d struct {
		Runner *proof.RunnerReport `json:"runner"`
	}
	if json.Unmarshal([]byte(*e.Data), &d) != nil {
		return nil
	}
	return d.Runner
}
