"""Whether this app may run a visitor's own Python file (the Build pages): only for one person on their own machine.

The rule: `BERTVIZ_LITE_ALLOW_CODE=1` allows it anywhere (the operator's explicit choice); otherwise a worker of
`python -m bertviz_lite.serve` never does (it serves many visitors), and a plain `streamlit run app.py` does only when
it listens on loopback alone (`--server.address 127.0.0.1`, `localhost` or `::1`). Streamlit's default, no address,
listens on every interface: anyone on the network could reach the page, so that is off too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from bertviz_lite.server.balancer import WORKER_SETTING

ALLOW_CODE_SETTING = "BERTVIZ_LITE_ALLOW_CODE"
LOOPBACK_COMMAND = "streamlit run app.py --server.address 127.0.0.1"


def is_loopback(address: str | None) -> bool:
    """True for an address that only this machine can reach: localhost, 127.0.0.0/8, ::1."""
    address = (address or "").strip().strip("[]")
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def code_allowed(address: str | None, environ: Mapping[str, str]) -> tuple[bool, str]:
    """(allowed, the one sentence that says why) for a server listening on `address` (Streamlit's server.address)."""
    setting = environ.get(ALLOW_CODE_SETTING, "").strip()
    if setting == "1":
        return True, f"Running your code is allowed by {ALLOW_CODE_SETTING}=1."
    fix = f"start the app with `{LOOPBACK_COMMAND}` on your own machine, or set {ALLOW_CODE_SETTING}=1 if you accept the risk"
    if setting:
        return (
            False,
            f"Running your code is off: {ALLOW_CODE_SETTING} is {setting[:20]!r}, and only 1 allows it.",
        )
    if WORKER_SETTING in environ:
        return False, (
            "Running your code is off: this app is served to many visitors (python -m bertviz_lite.serve), "
            f"where a visitor's file would run on the server; {fix}."
        )
    if not address:
        return False, (
            "Running your code is off: this server listens on every network interface, so anyone who can "
            f"reach it could run code on this machine; {fix}."
        )
    if not is_loopback(address):
        return False, (
            f"Running your code is off: this server listens on {address[:60]}, not on this machine alone; "
            f"{fix}."
        )
    return True, "Running your code is allowed: this server listens on this machine alone."
