# SPDX-License-Identifier: Apache-2.0
"""The Python client's unit tests, from the repository's root:
python3 -m unittest discover -s clients/python/tests -t clients/python"""
