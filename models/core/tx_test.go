package core

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"
)

// A write called with a context that carries another write's transaction
// joins it: both rooms' rows commit together, or neither does, and what the
// inner one changed is heard once the outer one commits.
func TestAWriteGivenATransactionJoinsIt(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	var heard []Change
	s.Changes().Subscribe(func(c Change) { heard = append(heard, c) })

	err := s.Write(ctx, func(tx *gorm.DB) error {
		if err := insertAccount(tx, "outer"); err != nil {
			return err
		}
		inner := WithTx(ctx, tx)
		if TxOf(inner) != tx {
			t.Error("TxOf does not return the transaction WithTx carries")
		}
		return s.Write(inner, func(tx2 *gorm.DB) error {
			if tx2 != tx {
				t.Error("the inner write runs in a transaction of its own")
			}
			if err := insertAccount(tx2, "inner"); err != nil {
				return err
			}
			if len(heard) != 0 {
				t.Errorf("heard %v before the outer write committed", heard)
			}
			return s.Changed(tx2, Change{Kind: AgentsChanged, AccountID: "acct_inner"})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := accountNames(t, s); !got["outer"] || !got["inner"] {
		t.Errorf("accounts after the joined write = %v, want outer and inner", got)
	}
	if len(heard) != 1 || heard[0].AccountID != "acct_inner" {
		t.Errorf("heard %v after the commit, want the inner write's one change", heard)
	}

	failed := errors.New("inner write refused")
	err = s.Write(ctx, func(tx *gorm.DB) error {
		if err := insertAccount(tx, "kept-only-if-all-succeed"); err != nil {
			return err
		}
		return s.Write(WithTx(ctx, tx), func(tx *gorm.DB) error {
			if err := insertAccount(tx, "inner-too"); err != nil {
				return err
			}
			return failed
		})
	})
	if !errors.Is(err, failed) {
		t.Fatalf("outer write = %v, want the inner write's refusal", err)
	}
	if got := accountNames(t, s); got["kept-only-if-all-succeed"] || got["inner-too"] {
		t.Errorf("accounts after a refused inner write = %v: the outer write's rows were kept", got)
	}
	if TxOf(ctx) != nil {
		t.Error("a plain context carries a transaction")
	}
}
