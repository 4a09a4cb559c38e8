"""gunicorn settings read from the working directory (the repository root): its own log lines
carry no request path or query string (powercontext/core/gunicorn_logging.py). Command-line
options still apply on top."""

from powercontext.core.gunicorn_logging import ACCESS_LOG_FORMAT

logger_class = "powercontext.core.gunicorn_logging.PrivateLogger"
access_log_format = ACCESS_LOG_FORMAT
