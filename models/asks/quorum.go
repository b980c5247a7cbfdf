package asks

// EventCountersigned is a signature that does not complete the quorum: the
// ask stays pending, one person nearer.
const EventCountersigned Event = "countersigned"
