"""Hosts whose destination files share one filesystem reserve their space one after the
other: as many complete as fit, and each one refused says the space that was really left."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading

import pytest

from topocast.runtime.store import Store, StoreError

MiB = 1 << 20


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=9m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("mount -t tmpfs failed here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)])


def _allocate_together(root, hosts: int, size: int):
    barrier = threading.Barrier(hosts)
    stores, errors = {}, {}

    def one(i):
        barrier.wait()
        try:
            stores[i] = Store.in_file(size, root / f"h{i}" / "message.bin.part")
        except StoreError as exc:
            errors[i] = str(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(hosts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stores, errors


def test_hosts_sharing_a_filesystem_reserve_their_space_one_after_the_other(small_tmpfs):
    size = 2 * MiB
    for attempt in range(5):
        st = os.statvfs(small_tmpfs)
        fits = st.f_bavail * st.f_frsize // size
        stores, errors = _allocate_together(small_tmpfs, 7, size)
        try:
            assert len(stores) == fits, (attempt, fits, errors)
            for message in errors.values():
                assert "no space left" in message, message
                free = int(re.search(r"(\d+) are free", message).group(1))
                assert free < size, message  # what was really left once the others had theirs
        finally:
            for s in stores.values():
                s.close()
            for i in range(7):
                shutil.rmtree(small_tmpfs / f"h{i}", ignore_errors=True)
