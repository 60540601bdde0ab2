# SPDX-License-Identifier: Apache-2.0
"""The webhook receivers' side of the signature: the two verification
recipes of docs/events.md, taken from the page itself so that the tests
exercise what users copy, and a signer made here for forged and replayed
headers."""
import hashlib
import hmac
import os
import re
import subprocess
import tempfile

from harness import make_secret


def recipes():
    """The two verification recipes of docs/events.md, as written there
    (Python's verified(key, body, header) and the shell script): the
    receivers here verify with them, so the docs' code is what is
    tested."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "..", "docs", "events.md")) as f:
        text = f.read()
    py = re.search(r"```python\n(.*?def verified.*?)```", text, re.S)
    sh = re.search(r"```sh\n(#!/bin/sh\n.*?verified.*?)```", text, re.S)
    assert py and sh, "docs/events.md lost a verification recipe"
    namespace = {}
    exec(py.group(1), namespace)
    return namespace["verified"], sh.group(1)


signature_ok, VERIFY_SH = recipes()


def sign(key, t, body):
    """A signature made here, as the scheme says: t=<t>,v1=<hex HMAC-SHA256
    of "<t>.<body>">."""
    mac = hmac.new(key, b"%d." % t + body, hashlib.sha256).hexdigest()
    return "t=%d,v1=%s" % (t, mac)


def shell_verified(workdir, key, body, header):
    """The shell recipe's verdict on one delivery, run as the docs say:
    where webhook.key is, with body.json and $sig."""
    d = tempfile.mkdtemp(dir=workdir)
    make_secret(d, key, name="webhook.key")
    with open(os.path.join(d, "body.json"), "wb") as f:
        f.write(body)
    r = subprocess.run(["sh", "-c", VERIFY_SH], cwd=d, capture_output=True,
                       text=True, timeout=30,
                       env=dict(os.environ, sig=header))
    return r.returncode == 0 and r.stdout.strip() == "verified"
