package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Several instances behind one address share one PostgreSQL; an MCP
// session lives in the memory of the instance that opened it. Each instance
// records here the internal address the others reach it at, and renews the
// record while it runs, so that an instance that gets a call on another's
// session forwards it there (mcp's forwarding).

// InstanceRenewEvery is how often a running instance renews its record;
// a record not renewed for InstanceLife is taken for a gone instance.
const (
	InstanceRenewEvery = 10 * time.Second
	InstanceLife       = 3 * InstanceRenewEvery
)

// Instance is one running instance: its id (the prefix of the MCP session
// ids it makes) and the base URL the other instances reach it at.
type Instance struct {
	ID      string `gorm:"primaryKey"`
	Address string
	SeenAt  time.Time
}

// ErrNoInstance is returned by InstanceAddress for an id no running
// instance has.
var ErrNoInstance = errors.New("no running instance has this id")

// RegisterInstance records (or renews) this instance's internal address.
func (s *Upkeep) RegisterInstance(ctx context.Context, id, address string) error {
	in := Instance{ID: id, Address: address, SeenAt: time.Now().UTC()}
	err := s.DB().WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"address", "seen_at"}),
	}).Create(&in).Error
	if err != nil {
		return fmt.Errorf("register instance: %w", err)
	}
	return nil
}

// ForgetInstance deletes this instance's record, at shutdown, and the
// records of instances gone for long.
func (s *Upkeep) ForgetInstance(ctx context.Context, id string) error {
	stale := time.Now().UTC().Add(-10 * InstanceLife)
	if err := s.DB().WithContext(ctx).Where("id = ? OR seen_at < ?", id, stale).Delete(&Instance{}).Error; err != nil {
		return fmt.Errorf("forget instance: %w", err)
	}
	return nil
}

// InstanceAddress is the internal address of the running instance id;
// ErrNoInstance when none has renewed that id within InstanceLife.
func (s *Upkeep) InstanceAddress(ctx context.Context, id string) (string, error) {
	var in Instance
	err := s.DB().WithContext(ctx).Where("id = ? AND seen_at >= ?", id, time.Now().UTC().Add(-InstanceLife)).Take(&in).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return "", ErrNoInstance
	case err != nil:
		return "", fmt.Errorf("instance address: %w", err)
	}
	return in.Address, nil
}
