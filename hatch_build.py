"""Hatchling build hook: compiles kgroup's optional C record decoder, ``kgroup._io._crecords``.

The module (``kgroup/_io/_crecords.c``, C and CPython's API only) is compiled with the
interpreter's own compiler settings (``sysconfig``: ``LDSHARED``, ``CCSHARED``, its include
directory) next to its source, so an editable install imports it from the tree and a wheel
carries it (then tagged for this interpreter and platform). Without a C compiler or Python's
headers the build warns and goes on: kgroup then decodes records with aiokafka's extension when
installed, else with kafka-python's pure-Python decoder (the same records, slower).
``KGROUP_NO_EXTENSIONS=1`` skips the compilation.
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

SOURCE = Path("kgroup") / "_io" / "_crecords.c"


class CustomBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Compiles ``kgroup._io._crecords`` for wheels and editable installs (not for the sdist)."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Compile next to the source; a wheel (``version`` not ``"editable"``) carries the result."""
        if self.target_name != "wheel" or os.environ.get("KGROUP_NO_EXTENSIONS") == "1":
            return
        root = Path(self.root)
        source = root / SOURCE
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        target = source.with_name("_crecords" + suffix)
        include = sysconfig.get_paths()["include"]
        cc = sysconfig.get_config_var("CC") or "cc"
        link = shlex.split(sysconfig.get_config_var("LDSHARED") or f"{cc} -shared")
        command = [*link, *shlex.split(sysconfig.get_config_var("CCSHARED") or "-fPIC"), "-O3", "-fwrapv",
                   f"-I{include}", str(source), "-o", str(target)]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", None) or exc
            print(f"kgroup: the C record decoder was not built ({shlex.join(command)}): {detail}\n"
                  "kgroup: records are decoded by aiokafka's extension if installed, else in pure Python",
                  file=sys.stderr)
            target.unlink(missing_ok=True)
            return
        if version != "editable":  # an editable install imports it from the tree
            build_data["force_include"][str(target)] = f"kgroup/_io/{target.name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
