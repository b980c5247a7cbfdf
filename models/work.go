package models

// The work board: an account's columns (key, name, order) and the items in
// them, with each item's history. It exists so that a work_move request has
// something real to move; people make, rename and move items themselves (no
// approval), and an approved work_move moves one inside the approval's
// transaction (see executeRequest).

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/countersign/countersign/ask"
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
		return Invalid(field, "must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit; got %q", key)
	}
	return nil
}

func checkWorkName(field, s string) error { return ask.CheckOneLine(field, s, 120) }

// AddColumn adds a column at the end of the account's board.
func (s *Store) AddColumn(ctx context.Context, accountID, key, name string) (*WorkColumn, error) {
	if err := checkColumnKey("key", key); err != nil {
		return nil, err
	}
	if err := checkWorkName("name", name); err != nil {
		return nil, err
	}
	c := &WorkColumn{ID: newID("col"), AccountID: accountID, Key: key, Name: name, CreatedAt: s.now()}
	err := s.write(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Table("work_columns").Where("account_id = ? AND key = ?", accountID, key).Count(&n).Error; err != nil {
			return fmt.Errorf("find column: %w", err)
		}
		if n > 0 {
			return Refuse(FailedPrecondition, "key", "the board already has a column %q", key)
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
func (s *Store) RenameColumn(ctx context.Context, accountID, key, name string) error {
	if err := checkWorkName("name", name); err != nil {
		return err
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Table("work_columns").Where("account_id = ? AND key = ?", accountID, key).Update("name", name)
		if res.Error != nil {
			return fmt.Errorf("rename column: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return Refuse(NotFound, "key", "no column %q on this board", key)
		}
		return nil
	})
}

// RemoveColumn removes an empty column; one that holds items is refused.
func (s *Store) RemoveColumn(ctx context.Context, accountID, key string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		c, err := findColumn(s.lock(tx.Table("work_columns")), accountID, key, "key")
		if err != nil {
			return err
		}
		var n int64
		if err := tx.Table("work_items").Where("account_id = ? AND column_key = ?", accountID, key).Count(&n).Error; err != nil {
			return fmt.Errorf("count items: %w", err)
		}
		if n > 0 {
			return Refuse(FailedPrecondition, "key", "column %q holds %d items: move or remove them first", key, n)
		}
		if err := tx.Table("work_columns").Where("id = ?", c.ID).Delete(&WorkColumn{}).Error; err != nil {
			return fmt.Errorf("remove column: %w", err)
		}
		return nil
	})
}

// AddItem puts a new item in a column.
func (s *Store) AddItem(ctx context.Context, accountID, columnKey, title, description, actorKind, actor string) (*WorkItem, error) {
	if err := checkWorkName("title", title); err != nil {
		return nil, err
	}
	if err := ask.CheckText("description", description, 2000); err != nil {
		return nil, err
	}
	now := s.now()
	it := &WorkItem{ID: newID("item"), AccountID: accountID, ColumnKey: columnKey, Title: title, Description: description, CreatedAt: now, UpdatedAt: now}
	err := s.write(ctx, func(tx *gorm.DB) error {
		if _, err := s.column(tx, accountID, columnKey, "column"); err != nil {
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
func (s *Store) RenameItem(ctx context.Context, accountID, itemID, title, description, actorKind, actor string) error {
	if err := checkWorkName("title", title); err != nil {
		return err
	}
	if err := ask.CheckText("description", description, 2000); err != nil {
		return err
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		it, err := s.item(tx, accountID, itemID, "item_id")
		if err != nil {
			return err
		}
		if err := tx.Table("work_items").Where("id = ?", it.ID).
			Updates(map[string]any{"title": title, "description": description, "updated_at": s.now()}).Error; err != nil {
			return fmt.Errorf("rename item: %w", err)
		}
		return s.workHistory(tx, it, actorKind, actor, WorkRenamed, "", "", "", "was "+it.Title)
	})
}

// MoveItem moves an item to another column on a person's own word.
func (s *Store) MoveItem(ctx context.Context, accountID, itemID, columnKey, actorKind, actor string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		it, err := s.item(tx, accountID, itemID, "item_id")
		if err != nil {
			return err
		}
		if _, err := s.column(tx, accountID, columnKey, "column"); err != nil {
			return err
		}
		if it.ColumnKey == columnKey {
			return Refuse(FailedPrecondition, "column", "item %s is already in column %q", it.ID, columnKey)
		}
		return s.moveItem(tx, it, columnKey, actorKind, actor, "")
	})
}

// RemoveItem removes an item; its history stays.
func (s *Store) RemoveItem(ctx context.Context, accountID, itemID, actorKind, actor string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		it, err := s.item(tx, accountID, itemID, "item_id")
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
func (s *Store) WorkBoard(ctx context.Context, accountID, columnKey string) (*Board, error) {
	b := &Board{}
	db := s.db.WithContext(ctx)
	cq := db.Table("work_columns").Where("account_id = ?", accountID)
	iq := db.Table("work_items").Where("account_id = ?", accountID)
	if columnKey != "" {
		cq, iq = cq.Where("key = ?", columnKey), iq.Where("column_key = ?", columnKey)
	}
	if err := cq.Order("position, key").Find(&b.Columns).Error; err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	if columnKey != "" && len(b.Columns) == 0 {
		return nil, Refuse(NotFound, "columnKey", "no column %q on this board", columnKey)
	}
	if err := iq.Order("created_at, id").Find(&b.Items).Error; err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	return b, nil
}

// GetWorkItem reads one item of the account; another account's or a removed
// one is NOT_FOUND.
func (s *Store) GetWorkItem(ctx context.Context, accountID, itemID string) (*WorkItem, error) {
	return findItem(s.db.WithContext(ctx).Table("work_items"), accountID, itemID, "item_id")
}

// WorkItemHistory reads an item's history, oldest first.
func (s *Store) WorkItemHistory(ctx context.Context, accountID, itemID string) ([]WorkHistory, error) {
	var out []WorkHistory
	if err := s.db.WithContext(ctx).Table("work_item_history").Where("account_id = ? AND item_id = ?", accountID, itemID).
		Order("seq").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("read item history: %w", err)
	}
	return out, nil
}

// column reads a column of the account inside tx; a missing one is NOT_FOUND naming field.
func (s *Store) column(tx *gorm.DB, accountID, key, field string) (*WorkColumn, error) {
	return findColumn(tx.Table("work_columns"), accountID, key, field)
}

// findColumn reads a column of the account from columns, a query on
// work_columns (locked or not); a missing one is NOT_FOUND naming field.
func findColumn(columns *gorm.DB, accountID, key, field string) (*WorkColumn, error) {
	var c WorkColumn
	err := columns.Where("account_id = ? AND key = ?", accountID, key).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, field, "no column %q on this account's board", key)
	}
	if err != nil {
		return nil, fmt.Errorf("find column: %w", err)
	}
	return &c, nil
}

// item reads and locks an item of the account inside tx; a missing one is NOT_FOUND naming field.
func (s *Store) item(tx *gorm.DB, accountID, id, field string) (*WorkItem, error) {
	return findItem(s.lock(tx.Table("work_items")), accountID, id, field)
}

// findItem reads an item of the account from items, a query on work_items
// (locked or not); a missing one is NOT_FOUND naming field.
func findItem(items *gorm.DB, accountID, id, field string) (*WorkItem, error) {
	var it WorkItem
	err := items.Where("account_id = ? AND id = ?", accountID, id).Take(&it).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, Refuse(NotFound, field, "no work item %q on this account's board", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find item: %w", err)
	}
	return &it, nil
}

// moveItem moves it to columnKey inside tx and writes the move on its history.
func (s *Store) moveItem(tx *gorm.DB, it *WorkItem, columnKey, actorKind, actor, approvalID string) error {
	if err := tx.Table("work_items").Where("id = ?", it.ID).
		Updates(map[string]any{"column_key": columnKey, "updated_at": s.now()}).Error; err != nil {
		return fmt.Errorf("move item: %w", err)
	}
	return s.workHistory(tx, it, actorKind, actor, WorkMoved, it.ColumnKey, columnKey, approvalID, "")
}

func (s *Store) workHistory(tx *gorm.DB, it *WorkItem, actorKind, actor, action, from, to, approvalID, note string) error {
	h := &WorkHistory{AccountID: it.AccountID, ItemID: it.ID, At: s.now(), ActorKind: actorKind, Actor: actor,
		Action: action, FromColumn: from, ToColumn: to, ApprovalID: approvalID, Note: strings.TrimSpace(note)}
	if err := tx.Table("work_item_history").Create(h).Error; err != nil {
		return fmt.Errorf("item history: %w", err)
	}
	return nil
}
