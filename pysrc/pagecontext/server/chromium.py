"""How the browser suites and the benchmarks start Chromium, and wait for what the
core's workers publish.

Debian's Chromium runs as root here, and nothing may reach out to the network on its
own: without the background-networking flags it tries, and is refused, many times.
"""

from __future__ import annotations

import os
from typing import Final

CHROMIUM_ARGS: Final = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)


def chromium_executable() -> str | None:
    """Return the Chromium to launch: PAGECONTEXT_CHROMIUM, else Debian's.

    An empty PAGECONTEXT_CHROMIUM means Playwright's own Chromium (None).
    """
    path = os.environ.get("PAGECONTEXT_CHROMIUM", "/usr/bin/chromium")
    return path or None


# The detail of the `performance.mark` named by the argument, in the page or worker it
# is evaluated in, once that mark is set (the core's workers mark their steps as
# `pagecontext:<step>`, web/worker.mjs and pagecontext.browser.worker).
MARK_DETAIL_JS: Final = """(name) => new Promise((resolve) => {
  const found = () => performance.getEntriesByName(name)[0];
  if (found()) return resolve(found().detail);
  new PerformanceObserver(() => { if (found()) resolve(found().detail); })
    .observe({ type: "mark" });
})"""
