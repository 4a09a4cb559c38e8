"""WSGI entry point (gunicorn powercontext.wsgi).

gunicorn loads the embedding model in each worker as it starts (``gunicorn.conf.py``,
``post_worker_init``); ``runserver`` loads it here, at startup. Either way the first prepare does
not pay for the model load.
"""

import os
import sys

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "powercontext.settings")
application = get_wsgi_application()

if "runserver" in sys.argv[1:2]:
    from powercontext.search import embedding

    embedding.warm_up()
