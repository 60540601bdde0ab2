# SPDX-License-Identifier: Apache-2.0
"""Topology harness: a Sentinel group and a Redis Cluster of real
redis-server processes on loopback ports, for tests of failover and
resharding. Standard library only; builds on harness.py's helpers.

Both classes start everything in __init__ and return only once the
topology is settled (replicas synced, every sentinel or node agreeing), so
a test can kill a master at once. On a failed start whatever was started
is stopped again before the error propagates.
"""
import os
import random
import shutil
import socket
import subprocess
import time

from harness import REDIS_SERVER, _read_reply, free_port, wait_until

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
STEP = 0.03  # poll interval, seconds


def cmd_at(port, *args, timeout=2.0):
    """One command on 127.0.0.1:port (a new connection); an error reply
    raises RuntimeError, a connection failure OSError."""
    with socket.create_connection(("127.0.0.1", port), timeout) as s:
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(out)
        return _read_reply(s.makefile("rb"))


def try_cmd(port, *args):
    """cmd_at, or None when the node is down or answers an error."""
    try:
        return cmd_at(port, *args)
    except (OSError, RuntimeError):
        return None


def info_fields(port, section):
    text = try_cmd(port, "INFO", section)
    if not isinstance(text, str):
        return {}
    return dict(line.split(":", 1) for line in text.splitlines()
                if ":" in line and not line.startswith("#"))


def _stop_procs(procs, timeout=10.0):
    """SIGTERM every process, then wait for all (one shared deadline), then
    SIGKILL whatever is left."""
    procs = [p for p in procs if p is not None]
    for p in procs:
        if p.poll() is None:
            try:
                p.terminate()
            except OSError:
                pass
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _spawn(args):
    return subprocess.Popen(args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)


def _wait_pong(proc, port, timeout=10.0):
    def up():
        if proc.poll() is not None:
            raise RuntimeError("redis on port %d exited with %s"
                               % (port, proc.returncode))
        return try_cmd(port, "PING") == "PONG"
    if not wait_until(up, timeout, STEP):
        raise RuntimeError("redis on port %d did not answer" % port)


def _check(ok, what):
    if not ok:
        raise RuntimeError("timed out waiting for " + what)


# --------------------------------------------------------------- Sentinel


class SentinelGroup:
    """A master, one replica and three sentinels monitoring "mymaster"."""

    NAME = "mymaster"

    def __init__(self, workdir, down_after_ms=1000):
        self.workdir = workdir
        self.down_after_ms = down_after_ms
        self.procs = {}           # data node port -> Popen
        self.sentinels = {}       # sentinel port -> Popen
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _server(self, port, extra=()):
        d = os.path.join(self.workdir, "redis-%d" % port)
        os.makedirs(d, exist_ok=True)
        proc = _spawn([REDIS_SERVER, "--port", str(port),
                       "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no", "--dir", d,
                       # Full syncs start at once, not after 5 s.
                       "--repl-diskless-sync-delay", "0",
                       "--logfile", os.path.join(d, "redis.log"), *extra])
        self.procs[port] = proc
        _wait_pong(proc, port)

    def _sentinel(self, port, master_port):
        conf = os.path.join(self.workdir, "sentinel-%d.conf" % port)
        with open(conf, "w") as f:
            f.write("port %d\n" % port
                    + "bind 127.0.0.1\n"
                    + "dir %s\n" % self.workdir
                    + "logfile %s\n" % os.path.join(
                        self.workdir, "sentinel-%d.log" % port)
                    + "sentinel monitor %s 127.0.0.1 %d 2\n"
                    % (self.NAME, master_port)
                    + "sentinel down-after-milliseconds %s %d\n"
                    % (self.NAME, self.down_after_ms)
                    + "sentinel failover-timeout %s 5000\n" % self.NAME
                    + "sentinel parallel-syncs %s 1\n" % self.NAME)
        proc = _spawn([REDIS_SERVER, conf, "--sentinel"])
        self.sentinels[port] = proc
        return proc

    def _start(self):
        master = free_port()
        self._server(master)
        replica = free_port()
        self._server(replica, ["--replicaof", "127.0.0.1", str(master)])
        _check(wait_until(
            lambda: info_fields(master, "replication").get(
                "connected_slaves") == "1"
            and info_fields(replica, "replication").get(
                "master_link_status") == "up", 15, STEP),
            "the replica to sync")
        # Sentinels start after the replica synced, so their first INFO of
        # the master already lists it.
        ports = []
        while len(ports) < 3:
            p = free_port()
            if p not in ports and p not in self.procs:
                ports.append(p)
        for p in ports:
            self._sentinel(p, master)
        for p in ports:
            _wait_pong(self.sentinels[p], p)

        def settled():
            for p in ports:
                reps = try_cmd(p, "SENTINEL", "replicas", self.NAME)
                sens = try_cmd(p, "SENTINEL", "sentinels", self.NAME)
                if not reps or not isinstance(sens, list) or len(sens) != 2:
                    return False
            return True
        _check(wait_until(settled, 20, STEP),
               "the sentinels to discover the replica and each other")

    # ---- queries

    def url(self):
        return "redis+sentinel://%s/%s" % (",".join(
            "127.0.0.1:%d" % p for p in self.sentinels), self.NAME)

    def _sentinel_view(self, port):
        r = try_cmd(port, "SENTINEL", "get-master-addr-by-name", self.NAME)
        if isinstance(r, list) and len(r) == 2:
            return r[0], int(r[1])
        return None

    def master_addr(self):
        """(host, port) of the master, as the first sentinel that answers
        reports it."""
        for p, proc in self.sentinels.items():
            if proc.poll() is None:
                addr = self._sentinel_view(p)
                if addr:
                    return addr
        raise RuntimeError("no sentinel knows the master")

    def cmd_master(self, *args):
        return cmd_at(self.master_addr()[1], *args)

    # ---- faults

    def set_down_after(self, ms):
        """How long every sentinel waits before it calls the master down,
        from now on: a failover then takes that long at least."""
        for port in self.sentinels:
            _check(cmd_at(port, "SENTINEL", "SET", self.NAME,
                          "down-after-milliseconds", str(ms)) == "OK",
                   "sentinel %d to take down-after-milliseconds" % port)

    def kill_master(self):
        """SIGKILL the current master; returns its port."""
        port = self.master_addr()[1]
        proc = self.procs[port]
        proc.kill()
        proc.wait()
        return port

    def wait_for_failover(self, old_port, timeout=20):
        """Wait until every live sentinel reports the same master, other
        than old_port, and that master says ROLE master. Returns its
        (host, port)."""
        found = []

        def done():
            views = {self._sentinel_view(p)
                     for p, proc in self.sentinels.items()
                     if proc.poll() is None}
            if len(views) != 1:
                return False
            addr = views.pop()
            if addr is None or addr[1] == old_port:
                return False
            role = try_cmd(addr[1], "ROLE")
            if not role or role[0] != "master":
                return False
            found[:] = [addr]
            return True
        _check(wait_until(done, timeout, STEP),
               "a failover away from port %d" % old_port)
        return found[0]

    def stop(self):
        _stop_procs(list(self.sentinels.values()) + list(self.procs.values()))


# ---------------------------------------------------------------- Cluster


def _port_pair_free(port):
    for p in (port, port + 10000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def cluster_port(taken=()):
    """A port in 20000-29999 that is free together with its bus port."""
    for _ in range(1000):
        p = random.randint(20000, 29999)
        if p not in taken and p + 10000 not in taken and _port_pair_free(p):
            return p
    raise RuntimeError("no free port pair for a cluster node")


def _slot_map(port):
    """CLUSTER SLOTS from port as a sorted tuple of
    (start, end, master port, (replica ports...)), or None."""
    r = try_cmd(port, "CLUSTER", "SLOTS")
    if not isinstance(r, list):
        return None
    return tuple(sorted(
        (int(e[0]), int(e[1]), int(e[2][1]),
         tuple(sorted(int(x[1]) for x in e[3:])))
        for e in r))


def _covers_all(slot_map):
    if not slot_map:
        return False
    nxt = 0
    for start, end, _, _ in slot_map:
        if start != nxt:
            return False
        nxt = end + 1
    return nxt == 16384


class Cluster:
    """masters * (1 + replicas_per_master) cluster nodes, created with
    redis-cli --cluster create."""

    def __init__(self, workdir, masters=3, replicas_per_master=1):
        self.workdir = workdir
        self.n_masters = masters
        self.replicas_per_master = replicas_per_master
        self.procs = {}           # port -> Popen, in start order
        self.initial_ports = []
        self._dead_ranges = {}    # killed port -> [(start, end)]
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _node(self, port):
        d = os.path.join(self.workdir, "node-%d" % port)
        os.makedirs(d, exist_ok=True)
        proc = _spawn([REDIS_SERVER, "--port", str(port),
                       "--bind", "127.0.0.1",
                       "--cluster-enabled", "yes",
                       "--cluster-config-file", "nodes-%d.conf" % port,
                       "--cluster-node-timeout", "1000",
                       "--appendonly", "no", "--save", "", "--dir", d,
                       "--repl-diskless-sync-delay", "0",
                       # CLUSTER SLOTS lists a replica only once its offset
                       # is past 0, which the master's replication PING
                       # does: every 1 s rather than every 10 s.
                       "--repl-ping-replica-period", "1",
                       "--logfile", os.path.join(d, "redis.log")])
        self.procs[port] = proc
        _wait_pong(proc, port)

    def _start_node(self):
        """Start a node on a fresh port pair; retried when the port was
        taken between the check and the bind."""
        last = None
        for _ in range(3):
            port = cluster_port(set(self.procs))
            try:
                self._node(port)
                return port
            except RuntimeError as e:
                last = e
                proc = self.procs.pop(port)
                _stop_procs([proc])
        raise last

    def _start(self):
        total = self.n_masters * (1 + self.replicas_per_master)
        for _ in range(total):
            self.initial_ports.append(self._start_node())
        r = subprocess.run(
            [REDIS_CLI, "--cluster", "create",
             *("127.0.0.1:%d" % p for p in self.initial_ports),
             "--cluster-replicas", str(self.replicas_per_master),
             "--cluster-yes"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("redis-cli --cluster create failed:\n"
                               + r.stdout.decode("utf-8", "replace"))
        _check(wait_until(lambda: self._settled(full=True), 30, STEP),
               "the cluster to settle")

    def _live(self):
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def _settled(self, dead=None, full=False):
        """Every live node: cluster_state:ok, the same full slot map (with
        its replicas), no slot on dead; every replica in it synced (its
        link up, online on its master); with full, every master has all
        its replicas."""
        maps = set()
        for p in self._live():
            info = try_cmd(p, "CLUSTER", "INFO")
            if not isinstance(info, str) or "cluster_state:ok" not in info:
                return False
            maps.add(_slot_map(p))
        if len(maps) != 1:
            return False
        m = maps.pop()
        if not _covers_all(m):
            return False
        if dead is not None and any(
                e[2] == dead or dead in e[3] for e in m):
            return False
        if full and any(len(e[3]) != self.replicas_per_master for e in m):
            return False
        for p in {r for e in m for r in e[3]}:
            if info_fields(p, "replication").get(
                    "master_link_status") != "up":
                return False
        # And from each master's side: every replica it lists is online.
        for p, reps in {(e[2], e[3]) for e in m}:
            info = info_fields(p, "replication")
            if info.get("role") != "master" or int(
                    info.get("connected_slaves", -1)) != len(reps):
                return False
            if any("state=online" not in info.get("slave%d" % i, "")
                   for i in range(len(reps))):
                return False
        return True

    # ---- queries

    def url(self):
        return "redis+cluster://" + ",".join(
            "127.0.0.1:%d" % p for p in self.initial_ports[:self.n_masters])

    def cmd(self, port, *args):
        return cmd_at(port, *args)

    def nodes(self):
        """(port, role, node_id) of every live node, from its own view;
        role is "master" or "slave"."""
        out = []
        for p in self._live():
            role = cmd_at(p, "ROLE")[0]
            out.append((p, role, cmd_at(p, "CLUSTER", "MYID")))
        return out

    def masters(self):
        return [p for p, role, _ in self.nodes() if role == "master"]

    def node_id(self, port):
        return cmd_at(port, "CLUSTER", "MYID")

    def slot_map(self):
        """(start, end, master port, replica ports) as a live node sees
        it."""
        for p in self._live():
            m = _slot_map(p)
            if m is not None:
                return m
        raise RuntimeError("no live cluster node")

    def slot_owner(self, slot):
        for start, end, port, _ in self.slot_map():
            if start <= slot <= end:
                return port
        raise RuntimeError("slot %d unassigned" % slot)

    def slots_of(self, port):
        """Number of slots port serves."""
        return sum(e - s + 1 for s, e, p, _ in self.slot_map() if p == port)

    def keyslot(self, key):
        return cmd_at(self._live()[0], "CLUSTER", "KEYSLOT", key)

    def key_for(self, port, prefix="k"):
        """A key whose slot port owns."""
        for i in range(100000):
            k = "%s%d" % (prefix, i)
            if self.slot_owner(self.keyslot(k)) == port:
                return k
        raise RuntimeError("no key found for port %d" % port)

    def keys_per_master(self):
        return {p: cmd_at(p, "DBSIZE") for p in self.masters()}

    # ---- changes

    def _cli(self, *args, timeout=120):
        return subprocess.run(
            [REDIS_CLI, "--cluster", *args], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            timeout=timeout)

    def check(self):
        """redis-cli --cluster check through a live node; (ok, output)."""
        r = self._cli("check", "127.0.0.1:%d" % self._live()[0], timeout=30)
        text = r.stdout.decode("utf-8", "replace")
        return r.returncode == 0 and "[ERR]" not in text, text

    def reshard(self, n_slots, from_port, to_port, timeout=60):
        """Move n_slots slots (and their keys) from from_port to to_port;
        returns once redis-cli is done, --cluster check passes and every
        node agrees on the new map."""
        r = self._cli("reshard", "127.0.0.1:%d" % from_port,
                      "--cluster-from", self.node_id(from_port),
                      "--cluster-to", self.node_id(to_port),
                      "--cluster-slots", str(n_slots), "--cluster-yes",
                      timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("reshard failed:\n"
                               + r.stdout.decode("utf-8", "replace"))
        last = []

        def ok():
            if not self._settled():
                return False
            good, text = self.check()
            last[:] = [text]
            return good
        if not wait_until(ok, timeout, 0.05):
            raise RuntimeError("cluster check failed after reshard:\n"
                               + (last[0] if last else ""))

    def set_node_timeout(self, ms):
        """cluster-node-timeout on every live node, from now on: a killed
        master's replica then takes over that long after it at least."""
        for port in self._live():
            _check(cmd_at(port, "CONFIG", "SET", "cluster-node-timeout",
                          str(ms)) == "OK",
                   "node %d to take cluster-node-timeout" % port)

    def kill(self, port):
        """SIGKILL the node on port (its slot ranges are remembered for
        wait_for_promotion)."""
        try:
            self._dead_ranges[port] = [(s, e) for s, e, p, _ in
                                       self.slot_map() if p == port]
        except RuntimeError:
            self._dead_ranges[port] = []
        proc = self.procs[port]
        proc.kill()
        proc.wait()

    def wait_for_promotion(self, dead_port, timeout=20):
        """Wait until the dead master's slots are served by a promoted
        replica and every live node is cluster_state:ok and agrees on the
        map again. Returns the sorted ports now serving the slots dead_port
        served when it was killed."""
        _check(wait_until(lambda: self._settled(dead=dead_port), timeout,
                          STEP),
               "a replica to take over from port %d" % dead_port)
        ranges = self._dead_ranges.get(dead_port, [])
        return sorted({self.slot_owner(s) for s, _ in ranges})

    def stop(self):
        _stop_procs(list(self.procs.values()))
