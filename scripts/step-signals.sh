# Sourced by the workflow steps that run a long perfci command (bash).
#
# actions/runner cancels a step by signalling the step's shell only (SIGINT, SIGTERM
# 7.5 s later, then SIGKILL of the whole tree 2.5 s after): a shell waiting for a
# foreground command holds such a signal until the command ends, so perfci would never
# hear it, never stop its servers cleanly, and be SIGKILLed. `perfci_run CMD...` runs CMD
# in the background and forwards each INT and TERM the shell receives to it; its status
# is CMD's.
perfci_run() {
  local pid status=0
  "$@" &
  pid=$!
  # shellcheck disable=SC2064 # the pid is meant to be expanded now
  trap "kill -INT $pid 2>/dev/null || true" INT
  # shellcheck disable=SC2064
  trap "kill -TERM $pid 2>/dev/null || true" TERM
  while :; do
    if wait "$pid"; then status=0; else status=$?; fi
    kill -0 "$pid" 2>/dev/null || break  # gone: $status is its exit status
  done
  trap - INT TERM
  return "$status"
}
