"""The defaults shipped inside the package: the seed Guild, the deployment file and the workflows.

The repository keeps them at its top level (``guild/``, ``deployment/``, ``workflows/``); this package
holds three relative symlinks to those folders, so a source checkout and an editable install read the
same files, and a built wheel or sdist carries real copies (setuptools follows the links when it collects
``package-data``). Everything is read through :mod:`importlib.resources`; the package must be installed
on a filesystem (a wheel, an editable install or a source checkout), not imported from a zip file.

``packaged_path(name)`` is the one way in. It never creates anything; callers decide what a missing
folder means.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

__all__ = ["PACKAGED", "PackagedName", "from_checkout", "packaged_path"]

PackagedName = Literal["guild", "deployment", "workflows"]
PACKAGED: tuple[PackagedName, ...] = ("guild", "deployment", "workflows")


def packaged_path(name: PackagedName) -> Path:
    """The filesystem path of one packaged default folder, symlinks resolved.

    Raises ``RuntimeError`` when the package is not on a filesystem (a zip import), where no path exists.
    """
    entry = resources.files(__name__).joinpath(name)
    if not isinstance(entry, Path):
        raise RuntimeError(f"orchestrator's packaged {name}/ is not on a filesystem ({entry!r}); install the wheel")
    return entry.resolve()


def from_checkout(name: PackagedName) -> bool:
    """Whether the packaged ``name`` is a source checkout's own top-level folder (the package holds a
    symlink to it: a clone or an editable install), not a copy inside an installed wheel."""
    entry = resources.files(__name__).joinpath(name)
    return isinstance(entry, Path) and entry.is_symlink()
