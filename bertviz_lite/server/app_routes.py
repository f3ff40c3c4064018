"""The app's own parts of Streamlit's web server, installed once per app process by app.py.

Streamlit (≥ 1.67) serves the app with Starlette and has no hook for an app's own routes outside st.App, so
`install` finds this process's Starlette application and changes its router: the cookie route
(server/cookie_handoff.py) goes first, and the upload gate (server/upload_gate.py) goes around Streamlit's PUT
upload route. Without a Starlette app (AppTest, a script) nothing is installed.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable

from bertviz_lite.server import cookie_handoff, upload_gate

_installed: list[bool] = []
_install_lock = threading.Lock()


def _starlette_apps() -> list:
    """This process's Starlette apps; gc.get_objects() leaves out objects gc.freeze() froze (app.py installs first)."""
    from starlette.applications import Starlette

    return [app for app in gc.get_objects() if issubclass(type(app), Starlette)]  # type(): no lazy __class__


def held_uploads(upload_manager) -> tuple[Callable[[str], tuple[int, int]], Callable[[], int]]:
    """What Streamlit's upload manager (its `file_storage`: session id -> file id -> record) holds: (files, bytes) of
    one session, and bytes of all."""

    def held(session_id: str) -> tuple[int, int]:
        files = list(upload_manager.file_storage.get(session_id, {}).values())
        return len(files), sum(len(file.data) for file in files)

    def held_by_all() -> int:
        return sum(held(session_id)[1] for session_id in list(upload_manager.file_storage))

    return held, held_by_all


def _gate_uploads(app, upload_manager) -> int:
    """Put the upload gate around the app's PUT upload route(s); how many it guards."""
    guarded = 0
    for route in app.router.routes:
        path = getattr(route, "path", "")
        methods = getattr(route, "methods", None) or ()
        if upload_gate.UPLOAD_PATH in path + "/" and "PUT" in methods and not getattr(route, "gated", False):
            route.app = upload_gate.wrap(route.app, *held_uploads(upload_manager))
            route.gated = True
            guarded += 1
    return guarded


def install(upload_manager) -> bool:
    """Add the cookie route and the upload gate to this process's Starlette app, once; False where there is none.

    upload_manager: Streamlit's (Runtime.instance().uploaded_file_mgr), which holds the uploaded files."""
    with _install_lock:
        if not _installed:
            from starlette.routing import Route

            apps = _starlette_apps()
            for app in apps:
                app.router.routes.insert(
                    0, Route(cookie_handoff.ROUTE_PATH, cookie_handoff.hand_over, methods=["GET"])
                )
                if not _gate_uploads(
                    app, upload_manager
                ):  # a Streamlit upgrade moved it: tests/browser/test_upload_gate_browser.py fails
                    logging.getLogger(__name__).error(
                        "Streamlit's upload route was not found: uploads have no gate"
                    )
            _installed.append(bool(apps))
        return _installed[0]
