"""WSGI entry point (gunicorn powercontext.wsgi).

gunicorn warms each worker up as it starts (``gunicorn.conf.py``, ``post_worker_init``);
``runserver`` does it here, at startup: the URL configuration and the Inbox templates at once,
the embedding model in a background thread (``powercontext/warmup.py``). Either way neither the
first Inbox page nor the first prepare pays for the imports or the model load.
"""

import os
import sys

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.settings")
application = get_wsgi_application()

if "runserver" in sys.argv[1:2]:
    from powercontext import warmup

    warmup.warm_up()
