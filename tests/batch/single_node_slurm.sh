#!/usr/bin/env bash
# A throwaway single-node Slurm cluster for the batch tests: munged (as the munge user) and slurmctld + slurmd
# (as root) on localhost, every state, spool, socket, pid and log file under one folder.
#
#   single_node_slurm.sh start DIR   # writes DIR/slurm.conf, starts the daemons, waits until the node is idle;
#                                    # use the cluster with SLURM_CONF=DIR/slurm.conf
#   single_node_slurm.sh stop DIR    # stops the daemons by their pid files
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge. Exit status 77 (with the reason on stderr)
# when the machine cannot host the cluster: not root, a package missing.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

stop_pid() {  # stop_pid FILE: TERM the process the pid file names, wait for it, then KILL
  local file=$1 pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

if [ "$cmd" = stop ]; then
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  stop_pid "$dir/munge/munged.pid"
  exit 0
fi
[ "$cmd" = start ] || { echo "$0: unknown command $cmd (start or stop)" >&2; exit 2; }

if [ "$(id -u)" -ne 0 ]; then
  echo "single-node Slurm: needs root (slurmd runs jobs as their users)" >&2
  exit 77
fi
for p in munged mungekey slurmctld slurmd sbatch scontrol sinfo; do
  if ! command -v "$p" >/dev/null; then
    echo "single-node Slurm: $p not found (apt-get install slurmctld slurmd slurm-client munge)" >&2
    exit 77
  fi
done

dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
chmod 755 "$dir"
chown munge:munge "$dir/munge"
chmod 755 "$dir/munge"  # clients need to reach the socket; the key itself is 0600
cannot_host() {  # cannot_host WHAT: the machine cannot run this cluster; the test skips
  echo "single-node Slurm: $1 (logs in $dir)" >&2
  exit 77
}
runuser -u munge -- mungekey --create --keyfile="$dir/munge/munge.key" --force || cannot_host "mungekey failed"
runuser -u munge -- munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" ||
  cannot_host "munged did not start"

host=$(hostname -s)
cat > "$dir/slurm.conf" <<CONF
ClusterName=headscope-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldPort=$((20000 + RANDOM % 20000))
SlurmdPort=$((40000 + RANDOM % 20000))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SchedulerType=sched/backfill
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -c -f "$SLURM_CONF" || cannot_host "slurmctld did not start"
slurmd -c -f "$SLURM_CONF" || cannot_host "slurmd did not start"
for _ in $(seq 300); do
  state=$(sinfo -h -N -o %T 2>/dev/null | head -1 || true)
  case "$state" in idle*|mixed*|allocated*) exit 0 ;; esac
  sleep 0.2
done
cannot_host "the node did not become idle within 60 s (state '$state'); see slurmctld.log and slurmd.log"
