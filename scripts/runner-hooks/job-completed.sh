#!/usr/bin/env bash
# Runner hook (ACTIONS_RUNNER_HOOK_JOB_COMPLETED): leave nothing of this job for the
# next one, whatever its trust level and however it ended (cancelled, killed, timed out),
# and nothing of another runner's job on the same host is touched:
#  - perfci containers of this runner (labels perfci=1 and perfci.runner=TAG), running or not;
#  - servers and sysbench of this runner's user that belong to this runner: their command
#    line or working directory points into the workspace, $RUNNER_TEMP or a perfci temp
#    dir of this runner (perfci-TAG-*; a database server of the host, another user's,
#    another runner's or elsewhere, is left alone);
#  - every other process of the runner's user (a non-root runner): whatever a job started
#    and left (a `setsid` process named like a compiler), but for the runner's own (this
#    hook's ancestors) and another runner's (a Runner.Listener or Runner.Worker, what
#    started it and everything under it);
#  - every process of the sandbox account (PERFCI_SANDBOX_USER: a pull request's build or
#    server that outlived a cancelled job; as the account, through runner-bootstrap's sudo
#    rule, for a runner user); one account per runner, so no other runner's is touched;
#  - this runner's perfci temp dirs (datadirs, sockets) in ${TMPDIR:-/tmp} (never the host lock file);
#  - the workspace, .git included, so no git hook or build output survives.
# TAG is what perfci's util/runner.py derives from $RUNNER_NAME and $RUNNER_TEMP (sha256,
# 8 hex digits: two runners on one host may share a name, never a RUNNER_TEMP).
# actions/runner runs this file as `bash --noprofile --norc -e -o pipefail FILE`: every
# step here is best effort (a process may exit while we look at it), so -e and pipefail
# are switched off and the hook never fails the job; it says what it removed.
set +e +o pipefail
set -u
say() { echo "perfci job-completed: $*"; }
tmp="${TMPDIR:-/tmp}"
job_paths=()
[ -n "${GITHUB_WORKSPACE:-}" ] && job_paths+=("$GITHUB_WORKSPACE")
[ -n "${RUNNER_TEMP:-}" ] && job_paths+=("$RUNNER_TEMP")
tag=""
if [ -n "${RUNNER_NAME:-}" ]; then
  tag=$(printf '%s\n%s' "$RUNNER_NAME" "${RUNNER_TEMP:-}" | sha256sum | cut -c1-8)
  job_paths+=("$tmp/perfci-$tag-")
  # the --workdir the workflows give perfci (datadirs on the disk under test), if any
  [ -n "${PERFCI_WORKDIR:-}" ] && job_paths+=("$PERFCI_WORKDIR/perfci-$tag-")
else
  say "RUNNER_NAME is not set: only the workspace and RUNNER_TEMP are cleaned"
fi

if [ -n "$tag" ] && command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  ids=$(docker ps -aq --filter label=perfci=1 --filter "label=perfci.runner=$tag")
  if [ -n "$ids" ]; then
    # shellcheck disable=SC2086 # one id per word
    docker rm --force $ids >/dev/null && say "removed containers: $(echo $ids | tr '\n' ' ')"
  fi
fi

belongs_to_job() {  # $1 = pid
  local cmd cwd p
  cmd=$(tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null) || return 1
  cwd=$(readlink "/proc/$1/cwd" 2>/dev/null || true)
  for p in "${job_paths[@]}"; do
    case "$cmd" in *"$p"*) return 0 ;; esac
    case "$cwd" in "$p"*) return 0 ;; esac
  done
  return 1
}

me=$(id -u)
victims=()
for dir in /proc/[0-9]*; do
  pid=${dir#/proc/}
  [ "$(stat -c %u "$dir" 2>/dev/null)" = "$me" ] || continue
  name=$(cat "$dir/comm" 2>/dev/null) || continue
  exe=$(tr '\0' '\n' < "$dir/cmdline" 2>/dev/null | head -n1)
  case "$name ${exe##*/}" in
    *mysqld*|*mariadbd*|*sysbench*) belongs_to_job "$pid" && victims+=("$pid") ;;
  esac
done
if [ ${#victims[@]} -gt 0 ]; then
  kill -TERM "${victims[@]}" 2>/dev/null
  for _ in $(seq 1 50); do  # up to 5 s for a clean exit, then SIGKILL
    alive=()
    for pid in "${victims[@]}"; do  # a zombie has exited: only its parent's wait is missing
      state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || continue
      [ "$state" != "Z" ] && alive+=("$pid")
    done
    [ ${#alive[@]} -eq 0 ] && break
    sleep 0.1
  done
  [ ${#alive[@]} -gt 0 ] && kill -KILL "${alive[@]}" 2>/dev/null
  say "stopped stray processes: ${victims[*]}"
fi

# Every other process of this user: the runner's own and another runner's are kept
# (a runner as root keeps the narrow rule above: root's processes are the host's).
# One line per process: pid, parent pid, uid, the name it was started as.
others_of_this_user() {
  local dir stat rest
  for dir in /proc/[0-9]*; do
    read -r stat < "$dir/stat" 2>/dev/null || continue
    rest=${stat##*) }  # after the command name, which may hold spaces and parentheses
    set -- $rest
    printf '%s %s %s %s\n' "${dir#/proc/}" "$2" "$(stat -c %u "$dir" 2>/dev/null)" \
      "$(tr '\0' '\n' < "$dir/cmdline" 2>/dev/null | head -n1 | sed 's|.*/||; s/ .*//')"
  done | awk -v me="$me" -v self="$$" '
    { parent[$1] = $2; uid[$1] = $3; runner[$1] = ($4 == "Runner.Listener" || $4 == "Runner.Worker") }
    END {
      for (p = self; p in parent && p > 1; p = parent[p]) kept[p] = 1  # this hook (and what it runs), the runner above
      for (p in parent) if (runner[p]) for (q = p; q in parent && q > 1; q = parent[q]) kept[q] = 1
      for (p in parent) {
        for (q = p; q in parent && q > 1; q = parent[q]) if (runner[q] || q == self) { kept[p] = 1; break }
        if (uid[p] == me && !(p in kept)) print p
      }
    }'
}
if [ "$me" != 0 ]; then
  mapfile -t strays < <(others_of_this_user)
  if [ ${#strays[@]} -gt 0 ]; then
    kill -KILL "${strays[@]}" 2>/dev/null
    say "ended processes the job left: ${strays[*]}"
  fi
fi

sandbox="${PERFCI_SANDBOX_USER:-}"
if [ -n "$sandbox" ] && [ "$sandbox" != root ]; then
  if [ "$me" = 0 ]; then
    as_sandbox=(setpriv "--reuid=$sandbox" "--regid=$sandbox" --clear-groups)
    case "$sandbox" in *:*) as_sandbox=(setpriv "--reuid=${sandbox%%:*}" "--regid=${sandbox#*:}" --clear-groups) ;; esac
  else
    as_sandbox=(sudo -n -u "$sandbox" --)
  fi
  uid=${sandbox%%:*}
  [[ "$uid" =~ ^[0-9]+$ ]] || uid=$(id -u "$sandbox" 2>/dev/null)
  left=$(for dir in /proc/[0-9]*; do [ "$(stat -c %u "$dir" 2>/dev/null)" = "$uid" ] && echo "${dir#/proc/}"; done)
  if [ -n "$uid" ] && [ -n "$left" ]; then
    # kill -1: every process the account may signal, which is its own
    "${as_sandbox[@]}" "$(type -P kill)" -KILL -- -1 2>/dev/null
    say "ended the sandbox account's processes ($sandbox): $(echo $left)"
  fi
fi

if [ -n "$tag" ]; then
  for d in "$tmp"/perfci-"$tag"-* ${PERFCI_WORKDIR:+"$PERFCI_WORKDIR"/perfci-"$tag"-*}; do
    [ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %u "$d")" = "$me" ] || continue
    rm -rf -- "$d" && say "removed $d"
  done
fi

if [ -n "${GITHUB_WORKSPACE:-}" ] && [ -d "$GITHUB_WORKSPACE" ]; then
  find "$GITHUB_WORKSPACE" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + && say "emptied the workspace $GITHUB_WORKSPACE"
fi
exit 0
