"""A real pod network for the exec kubelet, as the CNI bridge plugin builds one (option pod_network).

Per node a Linux bridge on this host holding the node's gateway address (x.y.z.1/24 of a /24 taken
from the benchmarking range 198.18.0.0/15 that no host interface uses); per pod a network namespace
with loopback and `eth0`, one end of a veth pair whose other end is enslaved to the node's bridge,
an address from the node's /24 and a default route via the gateway. Traffic between pods of one
node crosses veth + bridge + veth; between nodes it is routed by this host's kernel from one bridge
to the other (forwarding is switched on for these bridges only, not host-wide). hostNetwork pods
keep the host's network. The kernel paths are real; only "nodes" share one machine.

Everything is named after the emulator's process id (hex) and instance number, so several
emulators can run side by side and leftovers of a SIGKILLed one are found and removed (its
namespaces' processes killed, then namespaces and bridges deleted) when the next one starts.
iproute2 (`ip`) and util-linux (`nsenter`) do the work; root is required.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

RANGE = ipaddress.ip_network("198.18.0.0/15")
NETNS_PREFIX = "podtax-ksim-"
BRIDGE_PREFIX = "ksb"
VETH_PREFIX = "ksv"
ANNOTATION = "podtax.io/pod-network"
_NETNS = re.compile(rf"^{NETNS_PREFIX}([0-9a-f]{{6}})[0-9a-f]-[0-9a-f]+$")
_BRIDGE = re.compile(rf"^{BRIDGE_PREFIX}([0-9a-f]{{6}})[0-9a-f][0-9a-f]{{2}}$")
_VETH = re.compile(rf"^{VETH_PREFIX}([0-9a-f]{{6}})[0-9a-f][0-9a-f]{{4}}$")
_instances = itertools.count()


class NetError(RuntimeError):
    pass


def _ip(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=15, check=False)
    if check and proc.returncode != 0:
        raise NetError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def unavailable() -> str:
    """Why this machine cannot build pod networks ('' when it can)."""
    if os.geteuid() != 0:
        return "not running as root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2 / util-linux)"
    return ""


def host_address() -> str:
    """This host's address on its default route (what hostNetwork pods report as their IP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("203.0.113.1", 9))  # TEST-NET-3; a UDP connect sends nothing
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def _alive(pid_hex: str) -> bool:
    try:
        os.kill(int(pid_hex, 16), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespaces() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list", check=False).splitlines() if line.strip()]


def links(kind: str = "") -> list[str]:
    out = _ip("-o", "link", "show", *(["type", kind] if kind else []), check=False)
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]


def _kill_and_delete(ns: str) -> None:
    for pid in _ip("netns", "pids", ns, check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    _ip("netns", "delete", ns, check=False)


def remove_leftovers() -> list[str]:
    """Delete the namespaces, bridges and veths of emulators that no longer run; returns what was removed."""
    removed = []
    for ns in namespaces():
        m = _NETNS.match(ns)
        if m and not _alive(m.group(1)):
            _kill_and_delete(ns)
            removed.append(ns)
    for link in links("bridge"):
        m = _BRIDGE.match(link)
        if m and not _alive(m.group(1)):
            _ip("link", "delete", link, check=False)
            removed.append(link)
    # a veth goes with its pod's namespace, but the kernel frees it later (a workqueue: seconds on a loaded host),
    # and one whose namespace was never made or already gone stays: deleted by name
    for link in links("veth"):
        m = _VETH.match(link)
        if m and not _alive(m.group(1)):
            _ip("link", "delete", link, check=False)
            removed.append(link)
    return removed


def _used_subnets() -> set[ipaddress.IPv4Network]:
    used = set()
    for line in _ip("-4", "-o", "addr", "show", check=False).splitlines():
        m = re.search(r"inet (\S+)", line)
        if m:
            net = ipaddress.ip_interface(m.group(1)).network
            if net.overlaps(RANGE):
                used.update(net.subnets(new_prefix=24) if net.prefixlen < 24 else [net.supernet(new_prefix=24)])
    return used


@dataclass
class Bridge:
    name: str
    subnet: ipaddress.IPv4Network
    free: list[int] = field(default_factory=lambda: list(range(2, 255)))

    @property
    def gateway(self) -> str:
        return str(self.subnet.network_address + 1)


@dataclass(frozen=True)
class PodNet:
    netns: str
    veth: str  # the host-side end (tc qdiscs on it shape traffic towards the pod)
    ip: str
    gateway: str
    bridge: str

    @property
    def path(self) -> str:
        return f"/run/netns/{self.netns}"

    def annotation(self) -> str:
        return f"netns={self.netns} veth={self.veth} ip={self.ip} gateway={self.gateway} bridge={self.bridge}"

    def enter(self, uid: int | None = None, gid: int | None = None) -> list[str]:
        """argv prefix that runs a command inside the pod's network namespace (as uid/gid if given)."""
        ids = ([] if uid is None else ["-S", str(uid)]) + ([] if gid is None else ["-G", str(gid)])
        return ["nsenter", f"--net={self.path}", *ids, "--"]


class PodNetwork:
    """The pod networks of one emulator instance."""

    def __init__(self) -> None:
        reason = unavailable()
        if reason:
            raise NetError(f"pod_network needs root, iproute2 and nsenter: {reason}")
        self.tag = f"{os.getpid():06x}"[-6:] + f"{next(_instances) % 16:x}"
        self.bridges: dict[str, Bridge] = {}
        self.pods: dict[str, PodNet] = {}
        self.seq = itertools.count(1)
        self.removed_at_start = remove_leftovers()

    def _bridge(self, node: str) -> Bridge:
        if node in self.bridges:
            return self.bridges[node]
        name = f"{BRIDGE_PREFIX}{self.tag}{len(self.bridges):02x}"
        lock = Path(tempfile.gettempdir()) / "podtax-kubesim-net.lock"
        with open(lock, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # two emulators starting at once pick different subnets
            used = _used_subnets()
            start = int(self.tag, 16) % 512
            subnets = list(RANGE.subnets(new_prefix=24))
            subnet = next((s for s in subnets[start:] + subnets[:start] if s not in used), None)
            if subnet is None:
                raise NetError("no free /24 left in 198.18.0.0/15 on this host")
            _ip("link", "add", name, "type", "bridge")
            try:
                _ip("addr", "add", f"{subnet.network_address + 1}/24", "dev", name)
                _ip("link", "set", name, "up")
            except NetError:
                _ip("link", "delete", name, check=False)
                raise
        # route between node bridges through this host, without switching on forwarding host-wide
        Path(f"/proc/sys/net/ipv4/conf/{name}/forwarding").write_text("1")
        bridge = self.bridges[node] = Bridge(name, subnet)
        return bridge

    def attach(self, uid: str, node: str) -> PodNet:
        """Create the pod's namespace, veth pair and address; idempotent per pod uid."""
        if uid in self.pods:
            return self.pods[uid]
        bridge = self._bridge(node)
        if not bridge.free:
            raise NetError(f"no free address left in {bridge.subnet} for node {node}")
        n = next(self.seq)
        ns, veth = f"{NETNS_PREFIX}{self.tag}-{n:x}", f"{VETH_PREFIX}{self.tag}{n % 0x10000:04x}"
        ip = str(bridge.subnet.network_address + bridge.free.pop(0))
        _ip("netns", "add", ns)
        try:
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", bridge.name, "up")
            _ip("-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "route", "add", "default", "via", bridge.gateway)
        except NetError:
            _kill_and_delete(ns)
            _ip("link", "delete", veth, check=False)
            raise
        net = self.pods[uid] = PodNet(ns, veth, ip, bridge.gateway, bridge.name)
        return net

    def detach(self, uid: str) -> None:
        net = self.pods.pop(uid, None)
        if net is None:
            return
        _kill_and_delete(net.netns)  # the veth pair goes with the namespace
        _ip("link", "delete", net.veth, check=False)
        bridge = next((b for b in self.bridges.values() if b.name == net.bridge), None)
        if bridge is not None:
            bridge.free.append(int(ipaddress.ip_address(net.ip)) - int(bridge.subnet.network_address))

    def close(self) -> None:
        for uid in list(self.pods):
            self.detach(uid)
        for bridge in self.bridges.values():
            _ip("link", "delete", bridge.name, check=False)
        self.bridges.clear()
