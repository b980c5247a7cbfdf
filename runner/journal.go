package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// The states of a run in the journal.
const (
	stateNew      = ""
	stateClaiming = "claiming" // written before the claim is sent: from here on it never runs in another life
	stateClaimed  = "claimed"  // the service accepted the claim; the run was refused by this runner
	stateRunning  = "running"  // the script was about to start
	stateFinished = "finished" // done or failed was reported
	stateLost     = "lost"     // another runner claimed it first
)

// journal is one run's entry in the runner's local journal: a file under
// dir/journal, locked (flock) by the process that handles the run, written
// and synced before each step, so that a claim survives a crash and a
// restarted runner never runs a claimed run again.
type journal struct {
	ApprovalID    string    `json:"approval_id"`
	PayloadSHA256 string    `json:"payload_sha256"`
	State         string    `json:"state"`
	Detail        string    `json:"detail,omitempty"`
	At            time.Time `json:"at"`

	f *os.File
}

var errLocked = errors.New("the run is handled by another process")

// openJournal opens (or makes) a run's journal file and locks it; a file
// another live process holds is errLocked.
func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("lock the journal: %w", err)
	}
	if same, err := stillAt(f, path); err != nil || !same {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, errLocked // removed by its holder meanwhile: the next pass opens it afresh
	}
	j := &journal{f: f}
	raw, err := io.ReadAll(f)
	if err != nil {
		j.close()
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, j); err != nil {
			// A torn write is a claim whose outcome is unknown: never run it.
			j.State = stateClaiming
		}
	}
	return j, nil
}

// set writes the entry with a new state and syncs it to disk.
func (j *journal) set(state, detail string) error {
	j.State, j.Detail, j.At = state, detail, time.Now().UTC()
	raw, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("write the journal: %w", err)
	}
	if _, err := j.f.WriteAt(raw, 0); err != nil {
		return fmt.Errorf("write the journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync the journal: %w", err)
	}
	return nil
}

// stillAt says whether the locked file is still the one at path.
func stillAt(f *os.File, path string) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("read the journal: %w", err)
	}
	now, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the journal: %w", err)
	}
	return os.SameFile(held, now), nil
}

// remove deletes an entry that never claimed anything. An entry it fails to
// delete is harmless: an empty entry is a run not yet claimed.
func (j *journal) remove() {
	if j.State == stateNew {
		if err := os.Remove(j.f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return
		}
	}
}

func (j *journal) close() { j.f.Close() }
