"""host/hostcpu.py: who used the CPU during a burst."""

from __future__ import annotations

from perfci.host import hostcpu
from perfci.host.hostcpu import CpuSample


def test_the_kernels_own_threads_are_not_another_processs_load():
    """A VM's virtio disk under an fsync per transaction keeps kblockd busy most of a
    core: that is the measured server's own I/O, not a neighbour (removed once: such
    bursts were dropped as "host busy" and an A/B judged nothing)."""
    before = CpuSample(at=0.0, host=0.0, server=0.0, children=0.0, own=0.0, kernel=0.0)
    after = CpuSample(at=1.0, host=1.5, server=0.6, children=0.2, own=0.05, kernel=0.6)
    used = hostcpu.cores_used(before, after)
    assert used is not None and used["kernel"] == 0.6 and used["others"] == 0.05


def test_kernel_threads_are_read_from_proc():
    """kthreadd's children exist on any Linux host, and have used some CPU since boot."""
    assert hostcpu.kernel_thread_seconds() > 0.0
