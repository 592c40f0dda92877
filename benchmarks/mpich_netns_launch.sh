#!/bin/sh
# Launcher for MPICH's hydra (mpiexec -launcher ssh -launcher-exec THIS): hydra calls it like
# ssh, "THIS [ssh options] HOST COMMAND...". HOST is the name of an emulated host's network
# namespace; the command (hydra's proxy) runs inside it, so every rank lives in its host.
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;
    *) break ;;
  esac
done
ns="$1"; shift
exec ip netns exec "$ns" sh -c "$*"
