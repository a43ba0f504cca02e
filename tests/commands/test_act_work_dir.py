"""`perfci act`'s own state dir (.perfci-act/) is this host's, never a branch's."""

from __future__ import annotations

import pytest

from perfci.commands.act_cmd import WORK_DIR, own_work_dir
from perfci.util.errors import BadInput

from small_server_tree import git


def project(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    return tmp_path


def test_a_committed_or_linked_work_dir_is_refused(tmp_path):
    """Removed once: the committed dir (a results branch of the PR's making) was used."""
    root = project(tmp_path)
    (root / WORK_DIR).mkdir()
    (root / WORK_DIR / "results.git").write_text("planted\n")
    git(root, "add", "-f", WORK_DIR)
    with pytest.raises(BadInput, match="committed to the repository"):
        own_work_dir(root)
    git(root, "rm", "-q", "-r", "--cached", WORK_DIR)
    assert own_work_dir(root) == root / WORK_DIR
    (root / WORK_DIR / "results.git").unlink()
    (root / WORK_DIR).rmdir()
    (root / WORK_DIR).symlink_to(tmp_path.parent)
    with pytest.raises(BadInput, match="not a directory"):
        own_work_dir(root)
