"""Django's PostgreSQL backend with bounded waits on a hung server (``base.DatabaseWrapper``)."""
