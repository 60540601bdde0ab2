# SPDX-License-Identifier: Apache-2.0
"""Builds in a scratch directory, not in the source tree: pip builds a
local folder in place, and setuptools would leave build/ and
abuseguard.egg-info here, where a stale build/lib can even slip a
deleted module into the next wheel. The metadata is in pyproject.toml."""
import atexit
import shutil
import tempfile

from setuptools import setup

_scratch = tempfile.mkdtemp(prefix="abuseguard-build-")
atexit.register(shutil.rmtree, _scratch, True)
setup(options={"build": {"build_base": _scratch},
               "egg_info": {"egg_base": _scratch}})
