package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/asks"
	"github.com/countersign/countersign/models/people"
)

// The direct runs (-direct) measure the two sides of the ratio without HTTP
// and MCP: N goroutines call Store.CreateApproval, the function behind
// approvals_create, and N goroutines do the bare handler's one gorm insert.
// Their ratio is the most approvals_create/bare could reach with HTTP and
// MCP costing nothing: the database work of an ask against that of one row.

// fileDirect files the load's ask through the store as the service's agent
// and checks that it came back pending.
func fileDirect(store *models.Store, agent *people.Agent) request {
	return func(ctx context.Context, c int, n int64) error {
		args := prAsk(c, n)
		payload, err := json.Marshal(args["payload"])
		if err != nil {
			return err
		}
		askContext, err := json.Marshal(args["context"])
		if err != nil {
			return err
		}
		a, err := store.CreateApproval(ctx, models.NewAsk{
			Requester: agent, Kind: args["kind"].(string), Title: args["title"].(string), Summary: args["summary"].(string),
			ApproveMeans: args["approve_means"].(string), DenyMeans: args["deny_means"].(string),
			Payload: payload, Context: askContext,
		})
		if err != nil {
			return err
		}
		if !strings.HasPrefix(a.ID, "appr_") || a.Status != asks.StatusPending {
			return fmt.Errorf("unexpected ask: id %q status %q", a.ID, a.Status)
		}
		return nil
	}
}

// insertDirect does the bare handler's insert, without its HTTP.
func insertDirect(db *gorm.DB) request {
	return func(ctx context.Context, c int, n int64) error {
		id, err := insertItem(ctx, db, fmt.Sprintf("item-%d-%d", c, n), "Fixes the login redirect.")
		if err == nil && id <= 0 {
			err = fmt.Errorf("unexpected id %d", id)
		}
		return err
	}
}
