#!/bin/sh
# Reproduces ovn-northd 26.03.0/26.03.1 aborting with
#   assertion !sparse_array_add_at(&datapaths->dps, od, od->sdp->index) failed in ods_assign_array_index()
# when one engine run sees a Logical_Switch (or port-less Logical_Router)
# deleted and another created (upstream fix: ovn-org/ovn f49251b71, in v26.03.2).
#
# usage: hack/northd-index-reuse-repro.sh MODE [TRIES]
#   onetxn    delete A and create B in one NB transaction              (crashes)
#   twotxn    delete A, then create B in a second transaction, while northd is
#             busy (SIGSTOP'd, standing in for a long engine run) so that it reads
#             both in one run                                          (crashes)
#   createfirst as twotxn, but create B first, then delete A         (crashes too)
#   racy      delete A, then create B, back to back, northd running  (rarely crashes)
#   busy      like racy, but right after asking northd for a full recompute
#             (ovn-appctl inc-engine/recompute) of BASE (default 200) other
#             networks, so it is busy as under load: no SIGSTOP       (crashes)
#   barrier   delete A and wait for northd to catch up (--wait=sb, i.e. nb_cfg ->
#             sb_cfg), then create B while northd is busy            (no crash)
# Everything listens on 127.0.0.1 only; every process started is stopped by PID.
set -u
MODE=${1:-onetxn}
TRIES=${2:-5}
BIN=${OVN_BIN:-$HOME/.cache/ovn-udn/ovn/bin}
SHARE=${OVN_SHARE:-$HOME/.cache/ovn-udn/ovn/root/usr/share/ovn}
D=$(mktemp -d /tmp/northd-repro.XXXXXX)
export OVS_RUNDIR=$D OVN_RUNDIR=$D OVS_LOGDIR=$D OVN_LOGDIR=$D
pids=""
cleanup() { for p in $pids; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; sleep 0.2; for p in $pids; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT INT TERM
"$BIN/ovsdb-tool" create "$D/nb.db" "$SHARE/ovn-nb.ovsschema"
"$BIN/ovsdb-tool" create "$D/sb.db" "$SHARE/ovn-sb.ovsschema"
"$BIN/ovsdb-server" "$D/nb.db" --remote=punix:"$D/nb.sock" --unixctl="$D/nb.ctl" --no-chdir -vconsole:off --log-file="$D/nb.log" & pids="$pids $!"
"$BIN/ovsdb-server" "$D/sb.db" --remote=punix:"$D/sb.sock" --unixctl="$D/sb.ctl" --no-chdir -vconsole:off --log-file="$D/sb.log" & pids="$pids $!"
i=0; while [ ! -S "$D/nb.sock" ] || [ ! -S "$D/sb.sock" ]; do i=$((i+1)); [ $i -gt 200 ] && { echo "db start timeout"; exit 2; }; sleep 0.05; done
NB="unix:$D/nb.sock"; SB="unix:$D/sb.sock"
nbctl() { "$BIN/ovn-nbctl" --db="$NB" --timeout=10 "$@"; }
nbctl init; "$BIN/ovn-sbctl" --db="$SB" init
start_northd() {
  "$BIN/ovn-northd" --ovnnb-db="$NB" --ovnsb-db="$SB" --unixctl="$D/northd.ctl" --no-chdir -vconsole:off --log-file="$D/northd.log" 2>>"$D/northd.err" &
  NORTHD=$!; pids="$pids $NORTHD"
  nbctl --wait=sb sync
}
start_northd
# a network: one switch with a port, one router with a port, linked
net_add() {
  n=$1
  echo "-- ls-add sw-$n -- lsp-add sw-$n p-$n -- lr-add lr-$n -- lrp-add lr-$n rp-$n 00:00:00:00:00:0$2 10.$2.0.1/24"
}
net_del() { echo "-- ls-del sw-$1 -- lr-del lr-$1"; }
crashes=0; t=0
# eval with word splitting: the commands above hold no spaces inside arguments
nbctl --wait=sb $(net_add base 9) $(net_add a 1)
if [ "$MODE" = busy ]; then
  b=0; args=""
  while [ $b -lt "${BASE:-200}" ]; do b=$((b+1)); args="$args -- ls-add bsw-$b -- lsp-add bsw-$b bp-$b"; done
  nbctl --wait=sb $args
fi
cur=a; next=b; k=2
while [ $t -lt "$TRIES" ]; do
  t=$((t+1))
  case $MODE in
    onetxn)  nbctl $(net_del $cur) $(net_add $next $k) ;;
    twotxn)  kill -STOP $NORTHD; nbctl $(net_del $cur); nbctl $(net_add $next $k); kill -CONT $NORTHD ;;
    createfirst) kill -STOP $NORTHD; nbctl $(net_add $next $k); nbctl $(net_del $cur); kill -CONT $NORTHD ;;
    busy)    "$BIN/ovn-appctl" -t "$D/northd.ctl" inc-engine/recompute >/dev/null & rc=$!
             nbctl $(net_del $cur); nbctl $(net_add $next $k); wait $rc ;;
    racy)    nbctl $(net_del $cur); nbctl $(net_add $next $k) ;;
    barrier) nbctl --wait=sb $(net_del $cur); kill -STOP $NORTHD; nbctl $(net_add $next $k); kill -CONT $NORTHD ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
  esac
  if ! nbctl --timeout=5 --wait=sb sync 2>/dev/null || ! kill -0 $NORTHD 2>/dev/null; then
    sleep 0.2
    if ! kill -0 $NORTHD 2>/dev/null; then
      crashes=$((crashes+1))
      echo "try $t: northd died: $(grep -h -m1 -i 'assert' "$D/northd.log" "$D/northd.err" | tail -1)"
      wait $NORTHD 2>/dev/null
      # restart northd: it recomputes from scratch
      start_northd
    fi
  fi
  cur=$next; next=n$t; k=$(( (k % 8) + 1 ))
done
echo "mode=$MODE tries=$TRIES northd_crashes=$crashes (logs in $D)"
