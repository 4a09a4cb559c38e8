"""The prepare path in one place: selection, the pure builder, the application, explain/replay and the audit aggregates."""
