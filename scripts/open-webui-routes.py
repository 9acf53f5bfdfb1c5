#!/usr/bin/env python3
"""Print the route table of the installed Open WebUI as JSON, for test/operations/open-webui-routes.test.ts
and `npm run routes:check` (scripts/routes-check.ts).

Run with the Python of a venv where open-webui is installed. Every optional router is switched on
(analytics, SCIM) so that the printed table is the largest the release can serve. Output:
  {"version": "...", "http": [{"methods": [...], "path": "..."}], "mounts": ["/ws", ...],
   "socketio": ["connect", "usage", ...],
   "handlers": {"GET /api/version": "<fingerprint>", ...}, "events": {"connect": "<fingerprint>", ...}}

A fingerprint is the first 16 hex digits of the SHA-256 of the handler's source as Python prints it
back from its syntax tree (ast.unparse: comments, quotes and layout do not count), followed by the
same of the request and response models it names that Open WebUI defines (a form that gains a field
changes the fingerprint). What the handler calls (helpers, the access checks in utils/) is not in
it. "python" in the output is the interpreter's minor version: ast.unparse may print some code
differently in another one.

With --source ROUTE... it prints instead {"ROUTE": "source"} for each `METHOD /path` or Socket.IO
event named: what the fingerprint is taken of, for a person to read a changed handler.
"""
import ast
import hashlib
import inspect
import textwrap
import typing
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


def tree(obj):
    """A function's or class's source, printed back from its syntax tree; '' when it has none."""
    try:
        return ast.unparse(ast.parse(textwrap.dedent(inspect.getsource(obj))))
    except (OSError, TypeError, SyntaxError):
        return ''


def own_models(annotation, seen):
    """Classes of Open WebUI's own named in an annotation (Optional[Form], list[Model], ...)."""
    if inspect.isclass(annotation) and (annotation.__module__ or '').startswith('open_webui') and annotation not in seen:
        seen.append(annotation)
    for arg in typing.get_args(annotation):
        own_models(arg, seen)
    return seen


def handler_and_models(endpoint, response_model=None):
    """The handler's function and the classes of Open WebUI's own its parameters and answer name."""
    fn = inspect.unwrap(endpoint)
    models = []
    try:
        for param in inspect.signature(fn).parameters.values():
            own_models(param.annotation, models)
    except (TypeError, ValueError):
        pass
    own_models(response_model, models)
    return fn, models


def fingerprint(endpoint, response_model=None):
    fn, models = handler_and_models(endpoint, response_model)
    parts = [tree(fn)] + [f'{m.__module__}.{m.__qualname__}:{tree(m)}' for m in models]
    return hashlib.sha256('\n'.join(parts).encode()).hexdigest()[:16]


handlers = {}


def walk_handlers(routes, prefix=''):
    for r in routes:
        if isinstance(r, Mount):
            walk_handlers(getattr(r, 'routes', None) or [], prefix + r.path)
        elif getattr(r, 'endpoint', None) is not None:
            methods = ['WEBSOCKET'] if isinstance(r, WebSocketRoute) else sorted(r.methods or [])
            for m in methods:
                handlers[f'{m} {prefix + r.path}'] = fingerprint(r.endpoint, getattr(r, 'response_model', None))


walk_handlers(main.app.routes)


def source(endpoint, response_model=None):
    """The handler's source and the models it names, as a person reads them."""
    fn, models = handler_and_models(endpoint, response_model)
    parts = []
    for obj in [fn] + models:
        try:
            where = f'# {inspect.getsourcefile(obj).split("site-packages/")[-1]}'
            parts.append(where + '\n' + textwrap.dedent(inspect.getsource(obj)))
        except (OSError, TypeError):
            parts.append(f'# {obj!r}: no source')
    return '\n'.join(parts)


def sources_of(names):
    wanted, found = set(names), {}

    def visit(routes, prefix=''):
        for r in routes:
            if isinstance(r, Mount):
                visit(getattr(r, 'routes', None) or [], prefix + r.path)
            elif getattr(r, 'endpoint', None) is not None:
                methods = ['WEBSOCKET'] if isinstance(r, WebSocketRoute) else sorted(r.methods or [])
                for m in methods:
                    if f'{m} {prefix + r.path}' in wanted:
                        found[f'{m} {prefix + r.path}'] = source(r.endpoint, getattr(r, 'response_model', None))

    visit(main.app.routes)
    for by_event in socket_main.sio.handlers.values():
        for event, handler in by_event.items():
            if event in wanted:
                found[event] = source(handler)
    return found

events = set()
event_handlers = {}
for namespace, by_event in socket_main.sio.handlers.items():
    events.update(by_event.keys())
    for event, handler in by_event.items():
        event_handlers[event] = fingerprint(handler)

from importlib.metadata import version  # noqa: E402

VERSION = version('open-webui')

sys.stdout = real_stdout
if len(sys.argv) > 1 and sys.argv[1] == '--source':
    print(json.dumps(sources_of(sys.argv[2:]), indent=1))
    sys.exit(0)
print(
    json.dumps(
        {
            'version': VERSION,
            'python': f'{sys.version_info[0]}.{sys.version_info[1]}',
            'http': http,
            'mounts': sorted(set(mounts)),
            'socketio': sorted(events),
            'handlers': dict(sorted(handlers.items())),
            'events': dict(sorted(event_handlers.items())),
        },
        indent=1,
    )
)
