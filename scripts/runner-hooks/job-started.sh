#!/usr/bin/env bash
# Runner hook (ACTIONS_RUNNER_HOOK_JOB_STARTED). actions/runner starts a hook only by
# its extension (.sh: `bash --noprofile --norc -e -o pipefail FILE`), so this file hands
# over to the Python hook installed beside it; its exit code is the verdict (0 accept,
# 1 refuse). The system python3 by absolute path (runner-bootstrap writes the one it
# checked), isolated (-I: no PYTHON* variables, no user site): PATH at job start comes
# from the runner's .path, which the runner user can edit.
PYTHON=/usr/bin/python3
# (the directory by parameter expansion: `dirname` too would come from PATH)
exec "$PYTHON" -I "${BASH_SOURCE[0]%/*}/job-started.py"
