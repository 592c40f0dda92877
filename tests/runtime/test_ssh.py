"""The ssh launcher, for real: an OpenSSH server started on loopback by the test itself."""

import getpass
import os
import shutil
import socket
import subprocess
import time

import pytest

from topocast.runtime import SSHLauncher, perform

from .helpers import chain_plan

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture
def sshd(tmp_path):
    if SSHD is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("OpenSSH server/client not installed (apt-get install openssh-server openssh-client)")
    hostkey, userkey = tmp_path / "host_ed25519", tmp_path / "user_ed25519"
    for k in (hostkey, userkey):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)], check=True)
    auth = tmp_path / "authorized_keys"
    auth.write_text((tmp_path / "user_ed25519.pub").read_text())
    os.chmod(auth, 0o600)
    port = _free_port()
    cfg = tmp_path / "sshd_config"
    cfg.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {hostkey}\nAuthorizedKeysFile {auth}\n"
        f"PidFile {tmp_path / 'sshd.pid'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
    )
    os.makedirs("/run/sshd", exist_ok=True) if os.geteuid() == 0 else None
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            if proc.poll() is not None:
                pytest.skip(f"sshd did not start: {proc.stderr.read().decode(errors='replace')[-300:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield {"port": port, "key": str(userkey), "user": getpass.getuser()}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


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
