#!/usr/bin/env python3
"""Print the route table of the installed Open WebUI as JSON, for test/open-webui-routes.test.ts.

Run with the Python of a venv where open-webui is installed. Every optional router is switched on
(analytics, SCIM) so that the printed table is the largest the release can serve. Output:
  {"version": "...", "http": [{"methods": [...], "path": "..."}], "mounts": ["/ws", ...],
   "socketio": ["connect", "usage", ...]}
"""
import inspect
import json
import os
import sys
import tempfile

import atexit  # noqa: E402
import shutil  # noqa: E402

data_dir = tempfile.mkdtemp(prefix='owui-routes-')
atexit.register(shutil.rmtree, data_dir, True)
for key, value in {
    'DATA_DIR': data_dir,
    'WEBUI_SECRET_KEY': 'route-table',
    'OFFLINE_MODE': 'true',
    'ENABLE_OLLAMA_API': 'false',
    'ENABLE_OPENAI_API': 'false',
    'ENABLE_VERSION_UPDATE_CHECK': 'false',
    'ANONYMIZED_TELEMETRY': 'false',
    'SCARF_NO_ANALYTICS': 'true',
    'DO_NOT_TRACK': 'true',
    'RAG_EMBEDDING_ENGINE': 'openai',
    'RAG_EMBEDDING_MODEL': '',
    'ENABLE_ADMIN_ANALYTICS': 'true',
    'ENABLE_SCIM': 'true',
    'SCIM_TOKEN': 'route-table',
    # the slim install (requirements-slim.txt): no chromadb, no local models
    'USE_SLIM_DOCKER': os.environ.get('USE_SLIM_DOCKER', 'true'),
}.items():
    os.environ[key] = value
# As `open-webui serve` does (FROM_INIT_PY): the web app shipped in the wheel. Static assets are
# copied at import: into the temporary folder, never into the venv.
import importlib.util  # noqa: E402

package_dir = os.path.dirname(importlib.util.find_spec('open_webui').origin)
os.environ.setdefault('FRONTEND_BUILD_DIR', os.path.join(package_dir, 'frontend'))
os.environ['STATIC_DIR'] = os.path.join(data_dir, 'static')
os.chdir(data_dir)

# Open WebUI logs to stdout while importing: keep stdout for the JSON alone.
real_stdout = sys.stdout
sys.stdout = sys.stderr
import open_webui.main as main  # noqa: E402
from open_webui.socket import main as socket_main  # noqa: E402
from starlette.routing import Mount, Route, WebSocketRoute  # noqa: E402

http, mounts = [], []


def walk(routes, prefix=''):
    for r in routes:
        if isinstance(r, Mount):
            sub = getattr(r, 'routes', None) or []
            if sub:
                walk(sub, prefix + r.path)
            else:
                mounts.append(prefix + r.path or '/')
        elif isinstance(r, WebSocketRoute):
            http.append({'methods': ['WEBSOCKET'], 'path': prefix + r.path})
        elif isinstance(r, Route) or hasattr(r, 'methods'):
            http.append({'methods': sorted(r.methods or []), 'path': prefix + r.path})


walk(main.app.routes)

events = set()
for namespace, handlers in socket_main.sio.handlers.items():
    events.update(handlers.keys())

from importlib.metadata import version  # noqa: E402

VERSION = version('open-webui')

sys.stdout = real_stdout
print(json.dumps({'version': VERSION, 'http': http, 'mounts': sorted(set(mounts)), 'socketio': sorted(events)}, indent=1))
