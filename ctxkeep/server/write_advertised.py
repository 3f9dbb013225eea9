"""`python -m ctxkeep.server.write_advertised`: write ctxkeep/server/advertised.json from the registered definitions.

Run it after a tool, resource or prompt changed (its name, description, annotations or arguments); tests/server/test_advertised.py
fails until the file matches.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from ctxkeep.server.advertised import PATH, Lists
from ctxkeep.server.build import build_server
from ctxkeep.settings import Settings


async def registered() -> Lists:
    """The four lists as a server built now registers them."""
    with tempfile.TemporaryDirectory() as tmp:  # no database is opened: the lists never read one
        return await build_server(Settings(db_path=Path(tmp) / "unused.db", project="/advertised")).registered()


def main() -> None:
    """Write advertised.json."""
    PATH.write_text(anyio.run(registered).text(), encoding="utf-8")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
