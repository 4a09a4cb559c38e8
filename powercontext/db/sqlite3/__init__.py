"""Django's SQLite backend on a driver that can load sqlite-vec (see ``base``)."""
