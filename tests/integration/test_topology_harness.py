# SPDX-License-Identifier: Apache-2.0
"""Self-test of harness_topology: a Sentinel group and a Redis Cluster
start settled, serve keys, fail over and (the cluster) reshard."""
import shutil
import tempfile
import unittest

from harness_topology import Cluster, SentinelGroup, cmd_at


class TopologyTest(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="ag-topo-")
        self.addCleanup(shutil.rmtree, self.workdir, ignore_errors=True)

    def test_sentinel_failover(self):
        g = SentinelGroup(self.workdir)
        self.addCleanup(g.stop)
        self.assertRegex(g.url(), r"^redis\+sentinel://127\.0\.0\.1:\d+,"
                         r"127\.0\.0\.1:\d+,127\.0\.0\.1:\d+/mymaster$")
        host, old = g.master_addr()
        self.assertEqual(host, "127.0.0.1")
        self.assertEqual(g.cmd_master("SET", "k", "v1"), "OK")
        self.assertEqual(g.cmd_master("GET", "k"), "v1")
        self.assertEqual(g.cmd_master("WAIT", 1, 1500), 1)

        self.assertEqual(g.kill_master(), old)
        host, new = g.wait_for_failover(old)
        self.assertNotEqual(new, old)
        self.assertEqual(g.master_addr(), ("127.0.0.1", new))
        self.assertEqual(cmd_at(new, "ROLE")[0], "master")
        # The replicated key survived and the new master takes writes.
        self.assertEqual(g.cmd_master("GET", "k"), "v1")
        self.assertEqual(g.cmd_master("SET", "k", "v2"), "OK")
        self.assertEqual(g.cmd_master("GET", "k"), "v2")

    def test_cluster_reshard_and_failover(self):
        c = Cluster(self.workdir, masters=3, replicas_per_master=1)
        self.addCleanup(c.stop)
        masters = sorted(c.masters())
        self.assertEqual(len(masters), 3)
        self.assertEqual(len(c.nodes()), 6)
        self.assertEqual(
            sorted(r for _, r, _ in c.nodes()), ["master"] * 3 + ["slave"] * 3)
        self.assertRegex(c.url(), r"^redis\+cluster://127\.0\.0\.1:\d+,"
                         r"127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$")

        # One key on each master, chosen by CLUSTER KEYSLOT.
        keys = {}
        for m in masters:
            k = c.key_for(m, prefix="m%d-" % m)
            self.assertEqual(c.slot_owner(c.keyslot(k)), m)
            self.assertEqual(c.cmd(m, "SET", k, "v"), "OK")
            self.assertEqual(c.cmd(m, "GET", k), "v")
            self.assertEqual(c.cmd(m, "WAIT", 1, 1500), 1)
            keys[m] = k
        self.assertEqual(c.keys_per_master(), {m: 1 for m in masters})

        # Reshard 100 slots from the first master to the second.
        src, dst = masters[0], masters[1]
        before_src, before_dst = c.slots_of(src), c.slots_of(dst)
        c.reshard(100, src, dst)
        self.assertEqual(c.slots_of(src), before_src - 100)
        self.assertEqual(c.slots_of(dst), before_dst + 100)
        self.assertTrue(c.check()[0])
        moved = [s for s, e, p, _ in c.slot_map() if p == dst]
        self.assertTrue(any(c.slot_owner(s) == dst for s in moved))

        # Kill the third master; its replica takes over its slots.
        victim = masters[2]
        replica = [r for s, e, p, reps in c.slot_map() if p == victim
                   for r in reps]
        self.assertEqual(len(replica), 1)
        vslot = c.keyslot(keys[victim])
        c.kill(victim)
        owners = c.wait_for_promotion(victim)
        self.assertEqual(owners, replica)
        self.assertEqual(c.slot_owner(vslot), replica[0])
        self.assertEqual(cmd_at(replica[0], "ROLE")[0], "master")
        self.assertNotIn(victim, c.masters())
        self.assertIn(replica[0], c.masters())
        self.assertEqual(c.cmd(replica[0], "GET", keys[victim]), "v")
        self.assertIn("cluster_state:ok",
                      c.cmd(replica[0], "CLUSTER", "INFO"))


if __name__ == "__main__":
    unittest.main()
