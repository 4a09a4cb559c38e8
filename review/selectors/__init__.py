"""Review reads by role: ``queue`` (counts and keyset pages, shared by the Inbox and the API),
``candidate`` (one candidate, its versions, decision and history) and ``evidence`` (references
resolved within the candidate's scope, and the target diff)."""
