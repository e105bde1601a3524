"""Hatchling build hook: compiles kgroup's optional C modules, ``kgroup._io._crecords`` and ``_crecv``.

Each module (``kgroup/_io/_crecords.c``, the record decoder; ``kgroup/_io/_crecv.c``, a
response's bytes received without the GIL; C and CPython's API only) is compiled with the
interpreter's own compiler settings (``sysconfig``: ``LDSHARED``, ``CCSHARED``, its include
directory) next to its source, so an editable install imports it from the tree and a wheel
carries it (then tagged for this interpreter and platform). Without a C compiler or Python's
headers the build warns and goes on: kgroup then decodes records with aiokafka's extension when
installed, else with kafka-python's pure-Python decoder (the same records, slower), and receives
with ``socket.recv_into``. ``KGROUP_NO_EXTENSIONS=1`` skips the compilation.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCES = (Path("kgroup") / "_io" / "_crecords.c", Path("kgroup") / "_io" / "_crecv.c")
#: what kgroup does without each module
WITHOUT = {
    "_crecords": "records are decoded by aiokafka's extension if installed, else in pure Python",
    "_crecv": "responses are received with socket.recv_into",
}


class CustomBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles kgroup's C modules for wheels and editable installs (not for the sdist)."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile next to the source; a wheel (``version`` not ``"editable"``) carries the result."""
        if self.target_name != "wheel" or os.environ.get("KGROUP_NO_EXTENSIONS") == "1":
            return
        root = Path(self.root)
        for source in SOURCES:
            target = self._compile(root / source)
            if target is not None and version != "editable":  # an editable install imports it from the tree
                build_data["force_include"][str(target)] = f"kgroup/_io/{target.name}"
                build_data["pure_python"] = False
                build_data["infer_tag"] = True

    def _compile(self, source: Path) -> Path | None:
        """``source`` compiled next to itself; None (warned) when it cannot be."""
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        target = source.with_name(source.stem + suffix)
        include = sysconfig.get_paths()["include"]
        cc = sysconfig.get_config_var("CC") or "cc"
        link = shlex.split(sysconfig.get_config_var("LDSHARED") or f"{cc} -shared")
        command = [*link, *shlex.split(sysconfig.get_config_var("CCSHARED") or "-fPIC"), "-O3", "-fwrapv",
                   f"-I{include}", str(source), "-o", str(target)]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", None) or exc
            print(f"kgroup: the C module {source.stem} was not built ({shlex.join(command)}): {detail}\n"
                  f"kgroup: {WITHOUT.get(source.stem, 'kgroup runs without it')}", file=sys.stderr)
            target.unlink(missing_ok=True)
            return None
        return target
