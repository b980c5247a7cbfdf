package work

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/ask"
	"github.com/countersign/countersign/models/core"
	"gorm.io/gorm"
)

// WorkColumn is a column of the board.
type WorkColumn struct {
	ID        string
	AccountID string
	Key       string
	Name      string
	Position  int
	CreatedAt time.Time
}

// WorkItem is an item of the board, in one column.
type WorkItem struct {
	ID          string
	AccountID   string
	ColumnKey   string
	Title       string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// WorkHistory is one line of an item's history: who did what, and for a move
// by an approved request, which request.
type WorkHistory struct {
	Seq        int64 `gorm:"primaryKey;autoIncrement"`
	AccountID  string
	ItemID     string
	At         time.Time
	ActorKind  string
	Actor      string
	Action     string // created, renamed, moved, removed
	FromColumn string
	ToColumn   string
	ApprovalID string
	Note       string
}

// Actions on the history of an item.
const (
	WorkCreated = "created"
	WorkRenamed = "renamed"
	WorkMoved   = "moved"
	WorkRemoved = "removed"
)

// Board is an account's columns in order and their items, oldest first.
type Board struct {
	Columns []WorkColumn
	Items   []WorkItem
}

// ColumnName is the name of the board's column with key; a key the board no
// longer has is named by itself.
func (b *Board) ColumnName(key string) string {
	for _, c := range b.Columns {
		if c.Key == key {
			return c.Name
		}
	}
	return key
}

var columnKeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// checkColumnKey refuses a key that is not a short lower-case slug.
func checkColumnKey(field, key string) error {
	if !columnKeyPattern.MatchString(key) {
		return core.Invalid(field, "must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit; got %q", key)
	}
	return nil
}

func checkWorkName(field, s string) error { return ask.CheckOneLine(field, s, 120) }

// AddColumn adds a column at the end of the account's board.
func (s *Tracker) AddColumn(ctx context.Context, accountID, key, name string) (*WorkColumn, error) {
	if err := checkColumnKey("key", key); err != nil {
		return nil, err
	}
	if err := checkWorkName("name", name); err != nil {
		return nil, err
	}
	c := &WorkColumn{ID: core.NewID("col"), AccountID: accountID, Key: key, Name: name, CreatedAt: s.Now()}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Table("work_columns").Where("account_id = ? AND key = ?", accountID, key).Count(&n).Error; err != nil {
			return fmt.Errorf("find column: %w", err)
		}
		if n > 0 {
			return core.Refuse(core.FailedPrecondition, "key", "the board already has a column %q", key)
		}
		var last struct{ P *int }
		if err := tx.Table("work_columns").Select("MAX(position) AS p").Where("account_id = ?", accountID).Scan(&last).Error; err != nil {
			return fmt.Errorf("last column: %w", err)
		}
		if last.P != nil {
			c.Position = *last.P + 1
		}
		if err := tx.Table("work_columns").Create(c).Error; err != nil {
			return fmt.Errorf("add column: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// RenameColumn gives a column a new name; its key stays.
func (s *Tracker) RenameColumn(ctx context.Context, accountID, key, name string) error {
	if err := checkWorkName("name", name); err != nil {
		return err
	}
	return s.Write(ctx, func(tx *gorm.DB) error {
		res := tx.Table("work_columns").Where("account_id = ? AND key = ?", accountID, key).Update("name", name)
		if res.Error != nil {
			return fmt.Errorf("rename column: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return core.Refuse(core.NotFound, "key", "no column %q on this board", key)
		}
		return nil
	})
}

// RemoveColumn removes an empty column; one that holds items is refused.
func (s *Tracker) RemoveColumn(ctx context.Context, accountID, key string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		c, err := findColumn(s.Lock(tx.Table("work_columns")), accountID, key, "key")
		if err != nil {
			return err
		}
		var n int64
		if err := tx.Table("work_items").Where("account_id = ? AND column_key = ?", accountID, key).Count(&n).Error; err != nil {
			return fmt.Errorf("count items: %w", err)
		}
		if n > 0 {
			return core.Refuse(core.FailedPrecondition, "key", "column %q holds %d items: move or remove them first", key, n)
		}
		if err := tx.Table("work_columns").Where("id = ?", c.ID).Delete(&WorkColumn{}).Error; err != nil {
			return fmt.Errorf("remove column: %w", err)
		}
		return nil
	})
}

// AddItem puts a new item in a column.
func (s *Tracker) AddItem(ctx context.Context, accountID, columnKey, title, description, actorKind, actor string) (*WorkItem, error) {
	if err := checkWorkName("title", title); err != nil {
		return nil, err
	}
	if err := ask.CheckText("description", description, 2000); err != nil {
		return nil, err
	}
	now := s.Now()
	it := &WorkItem{ID: core.NewID("item"), AccountID: accountID, ColumnKey: columnKey, Title: title, Description: description, CreatedAt: now, UpdatedAt: now}
	err := s.Write(ctx, func(tx *gorm.DB) error {
		if _, err := s.Column(tx, accountID, columnKey, "column"); err != nil {
			return err
		}
		if err := tx.Table("work_items").Create(it).Error; err != nil {
			return fmt.Errorf("add item: %w", err)
		}
		return s.workHistory(tx, it, actorKind, actor, WorkCreated, "", columnKey, "", "")
	})
	if err != nil {
		return nil, err
	}
	return it, nil
}

// RenameItem sets an item's title and description.
func (s *Tracker) RenameItem(ctx context.Context, accountID, itemID, title, description, actorKind, actor string) error {
	if err := checkWorkName("title", title); err != nil {
		return err
	}
	if err := ask.CheckText("description", description, 2000); err != nil {
		return err
	}
	return s.Write(ctx, func(tx *gorm.DB) error {
		it, err := s.Item(tx, accountID, itemID, "item_id")
		if err != nil {
			return err
		}
		if err := tx.Table("work_items").Where("id = ?", it.ID).
			Updates(map[string]any{"title": title, "description": description, "updated_at": s.Now()}).Error; err != nil {
			return fmt.Errorf("rename item: %w", err)
		}
		return s.workHistory(tx, it, actorKind, actor, WorkRenamed, "", "", "", "was "+it.Title)
	})
}

// MoveItem moves an item to another column on a person's own word.
func (s *Tracker) MoveItem(ctx context.Context, accountID, itemID, columnKey, actorKind, actor string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		it, err := s.Item(tx, accountID, itemID, "item_id")
		if err != nil {
			return err
		}
		if _, err := s.Column(tx, accountID, columnKey, "column"); err != nil {
			return err
		}
		if it.ColumnKey == columnKey {
			return core.Refuse(core.FailedPrecondition, "column", "item %s is already in column %q", it.ID, columnKey)
		}
		return s.moveItem(tx, it, columnKey, actorKind, actor, "")
	})
}

// RemoveItem removes an item; its history stays.
func (s *Tracker) RemoveItem(ctx context.Context, accountID, itemID, actorKind, actor string) error {
	return s.Write(ctx, func(tx *gorm.DB) error {
		it, err := s.Item(tx, accountID, itemID, "item_id")
		if err != nil {
			return err
		}
		if err := tx.Table("work_items").Where("id = ?", it.ID).Delete(&WorkItem{}).Error; err != nil {
			return fmt.Errorf("remove item: %w", err)
		}
		return s.workHistory(tx, it, actorKind, actor, WorkRemoved, it.ColumnKey, "", "", "")
	})
}

// WorkBoard reads the account's board; a non-empty columnKey keeps that
// column and its items only.
func (s *Tracker) WorkBoard(ctx context.Context, accountID, columnKey string) (*Board, error) {
	b := &Board{}
	db := s.DB().WithContext(ctx)
	cq := db.Table("work_columns").Where("account_id = ?", accountID)
	iq := db.Table("work_items").Where("account_id = ?", accountID)
	if columnKey != "" {
		cq, iq = cq.Where("key = ?", columnKey), iq.Where("column_key = ?", columnKey)
	}
	if err := cq.Order("position, key").Find(&b.Columns).Error; err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	if columnKey != "" && len(b.Columns) == 0 {
		return nil, core.Refuse(core.NotFound, "columnKey", "no column %q on this board", columnKey)
	}
	if err := iq.Order("created_at, id").Find(&b.Items).Error; err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	return b, nil
}

// GetWorkItem reads one item of the account; another account's or a removed
// one is NOT_FOUND.
func (s *Tracker) GetWorkItem(ctx context.Context, accountID, itemID string) (*WorkItem, error) {
	return findItem(s.DB().WithContext(ctx).Table("work_items"), accountID, itemID, "item_id")
}

// WorkItemHistory reads an item's history, oldest first.
func (s *Tracker) WorkItemHistory(ctx context.Context, accountID, itemID string) ([]WorkHistory, error) {
	var out []WorkHistory
	if err := s.DB().WithContext(ctx).Table("work_item_history").Where("account_id = ? AND item_id = ?", accountID, itemID).
		Order("seq").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("read item history: %w", err)
	}
	return out, nil
}

// Column reads a column of the account inside tx; a missing one is NOT_FOUND naming field.
func (s *Tracker) Column(tx *gorm.DB, accountID, key, field string) (*WorkColumn, error) {
	return findColumn(tx.Table("work_columns"), accountID, key, field)
}

// findColumn reads a column of the account from columns, a query on
// work_columns (locked or not); a missing one is NOT_FOUND naming field.
func findColumn(columns *gorm.DB, accountID, key, field string) (*WorkColumn, error) {
	var c WorkColumn
	err := columns.Where("account_id = ? AND key = ?", accountID, key).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, field, "no column %q on this account's board", key)
	}
	if err != nil {
		return nil, fmt.Errorf("find column: %w", err)
	}
	return &c, nil
}

// Item reads and locks an item of the account inside tx; a missing one is NOT_FOUND naming field.
func (s *Tracker) Item(tx *gorm.DB, accountID, id, field string) (*WorkItem, error) {
	return findItem(s.Lock(tx.Table("work_items")), accountID, id, field)
}

// findItem reads an item of the account from items, a query on work_items
// (locked or not); a missing one is NOT_FOUND naming field.
func findItem(items *gorm.DB, accountID, id, field string) (*WorkItem, error) {
	var it WorkItem
	err := items.Where("account_id = ? AND id = ?", accountID, id).Take(&it).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, core.Refuse(core.NotFound, field, "no work item %q on this account's board", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find item: %w", err)
	}
	return &it, nil
}

// moveItem moves it to columnKey inside tx and writes the move on its history.
func (s *Tracker) moveItem(tx *gorm.DB, it *WorkItem, columnKey, actorKind, actor, approvalID string) error {
	if err := tx.Table("work_items").Where("id = ?", it.ID).
		Updates(map[string]any{"column_key": columnKey, "updated_at": s.Now()}).Error; err != nil {
		return fmt.Errorf("move item: %w", err)
	}
	return s.workHistory(tx, it, actorKind, actor, WorkMoved, it.ColumnKey, columnKey, approvalID, "")
}

func (s *Tracker) workHistory(tx *gorm.DB, it *WorkItem, actorKind, actor, action, from, to, approvalID, note string) error {
	h := &WorkHistory{AccountID: it.AccountID, ItemID: it.ID, At: s.Now(), ActorKind: actorKind, Actor: actor,
		Action: action, FromColumn: from, ToColumn: to, ApprovalID: approvalID, Note: strings.TrimSpace(note)}
	if err := tx.Table("work_item_history").Create(h).Error; err != nil {
		return fmt.Errorf("item history: %w", err)
	}
	return nil
}
