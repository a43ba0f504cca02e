#!/usr/bin/env bash
# Runner hook (ACTIONS_RUNNER_HOOK_JOB_STARTED). actions/runner starts a hook only by
# its extension (.sh: `bash --noprofile --norc -e -o pipefail FILE`), so this file hands
# over to the Python hook installed beside it; its exit code is the verdict (0 accept,
# 1 refuse). The system python3: the hook runs before the job installs anything.
exec python3 "$(dirname -- "${BASH_SOURCE[0]}")/job-started.py"
