package asks

// notCreated is the predicate of the partial index events_account_step,
// written out for the same reason as openAsks.
const NotCreated = "step <> 'created'"
