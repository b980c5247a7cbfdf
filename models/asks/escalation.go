package asks

// EventEscalated is an ask passing to its rule's escalation pool: it stays
// pending, and more people may sign it.
const EventEscalated Event = "escalated"
