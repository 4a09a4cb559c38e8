"""Learning from use (seed 002, 5.7 / 6.1 / 12.4): what agents report about the items prepare
cited.

- ``models``: the append-only feedback log, the per-item counters derived from it (a projection,
  like the search indexes), and people's decisions on reported items.
- ``targets``: a citation as prepare returned it -> the one immutable item it names.
- ``services``: record feedback (one transaction: the log rows and the counters they change),
  rebuild and verify the counters from the log.
- ``selectors``: the counters of a prepare's hits (one read), the reported items for the Inbox.
- ``prior``: pure: the bounded use prior and the hold rule, from counters and ``now``.
"""
