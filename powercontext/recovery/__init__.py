"""Session recovery state (seed 004, R-004): per-session notes and the session's history."""
