"""The ssh launcher, for real: an OpenSSH server started on loopback by the test itself."""

import subprocess

import pytest

from topocast.runtime import SSHLauncher, perform

from .helpers import chain_plan
from .sshd import SshdUnavailable, loopback_sshd


@pytest.fixture
def sshd(tmp_path):
    try:
        with loopback_sshd(tmp_path) as info:
            yield info
    except SshdUnavailable as why:
        pytest.skip(str(why))


def test_ssh_launcher_runs_a_plan(sshd):
    hosts = {h: {"target": f"{sshd['user']}@127.0.0.1", "port": sshd["port"], "address": "127.0.0.1"} for h in "sabcd"}
    launcher = SSHLauncher(
        hosts,
        identity=sshd["key"],
        options=["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"],
    )
    size = 1_500_000
    out = perform(chain_plan(size), launcher=launcher, chunk_size=64 * 1024)
    assert out.failed == {}, out.failed
    assert all(out.result.per_host[h].completed for h in "abcd")


def test_ssh_refused_key_is_reported(sshd, tmp_path):
    bad = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(bad)], check=True)
    hosts = {h: {"target": f"{sshd['user']}@127.0.0.1", "port": sshd["port"], "address": "127.0.0.1"} for h in "sabcd"}
    launcher = SSHLauncher(
        hosts,
        identity=str(bad),
        options=["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"],
    )
    from topocast.runtime import RunError

    with pytest.raises(RunError, match="exited before connecting"):
        perform(chain_plan(100_000), launcher=launcher)
