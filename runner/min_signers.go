package runner

import "strings"

// effectProduction is the effect of a run that changes production: the one
// a runner may hold to a minimum of signers of its own.
const effectProduction = "production"

// belowMinimum refuses a production run whose proof holds the approvals of
// fewer distinct people than Options.MinSignersProduction, whatever
// requirement the server froze into it: the server chooses that when the
// ask is filed, and the run's payload does not pin it, so the runner's own
// minimum is what a server that lowers it cannot get past. It returns nil
// for a run the minimum lets through.
func (r *Runner) belowMinimum(p *Plan) *Refusal {
	if p.Effect != effectProduction || len(p.Signers) >= r.opts.MinSignersProduction {
		return nil
	}
	return refuse("this runner runs a production run only with the approvals of at least %d distinct people (--min-signers-production), and its proof holds %d (%s)",
		r.opts.MinSignersProduction, len(p.Signers), strings.Join(p.Signers, ", "))
}
