"""An OpenSSH server on loopback, started by a test for the ssh launcher and stopped after it."""

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)

# ssh options for a server whose host key was made a moment ago
SSH_OPTIONS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]


class SshdUnavailable(Exception):
    """Why no loopback sshd could be started (a reason to skip, not a failure)."""


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@contextlib.contextmanager
def loopback_sshd(directory: Path):
    """Start sshd on 127.0.0.1 with fresh keys in ``directory``; yield port, user key, user name, pid."""
    if SSHD is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        raise SshdUnavailable("OpenSSH server/client not installed (apt-get install openssh-server openssh-client)")
    directory = Path(directory)
    hostkey, userkey = directory / "host_ed25519", directory / "user_ed25519"
    for k in (hostkey, userkey):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)], check=True)
    auth = directory / "authorized_keys"
    auth.write_text((directory / "user_ed25519.pub").read_text())
    os.chmod(auth, 0o600)
    port = _free_port()
    cfg = directory / "sshd_config"
    cfg.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {hostkey}\nAuthorizedKeysFile {auth}\n"
        f"PidFile {directory / 'sshd.pid'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
    )
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", exist_ok=True)
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stderr=subprocess.PIPE)
    try:
        for _ in range(100):
            if proc.poll() is not None:
                raise SshdUnavailable(f"sshd did not start: {proc.stderr.read().decode(errors='replace')[-300:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield {"port": port, "key": str(userkey), "user": getpass.getuser(), "pid": proc.pid}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
