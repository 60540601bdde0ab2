# SPDX-License-Identifier: Apache-2.0
"""The package's version, read by pyproject.toml too (one place)."""

__version__ = "0.1.0"
