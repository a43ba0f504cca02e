"""The offline image builder's parts (the images themselves are built and run in
test_e2e_docker.py)."""

from __future__ import annotations

import tarfile

import pytest

from perfci.providers.localimages import ENTRYPOINT, LOCAL_IMAGES, RootFs, image_config, my_cnf, select, shared_libraries
from perfci.util.errors import BadInput

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd6a5f2000)
\tlibaio.so.1 => /lib/x86_64-linux-gnu/libaio.so.1 (0x00007f0c1a2f0000)
\tlibssl.so.1.1 => /srv/cache/tarballs/x/lib/private/libssl.so.1.1 (0x00007f0c1a200000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c19e00000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1a33a000)
"""


def test_ldd_output_gives_every_library_and_the_loader_but_not_the_vdso():
    assert shared_libraries(LDD) == ["/lib/x86_64-linux-gnu/libaio.so.1", "/srv/cache/tarballs/x/lib/private/libssl.so.1.1",
                                     "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]


def test_images_read_the_official_include_dir_and_run_the_entrypoint():
    cnf = my_cnf(basedir_image=True)
    assert cnf.rstrip().endswith("!includedir /etc/mysql/conf.d/") and "basedir = /opt/server" in cnf
    assert "basedir" not in my_cnf(basedir_image=False)
    config = image_config("abc123", "maven:g:a:1/x.tar.gz#sha256=00")
    assert 'ENTRYPOINT ["docker-entrypoint.sh"]' in config and 'CMD ["mysqld"]' in config
    assert config[-1] == 'LABEL perfci.recipe=abc123 perfci.source="maven:g:a:1/x.tar.gz#sha256=00"'
    # what the provider relies on in the official entrypoints
    assert "MYSQL_ALLOW_EMPTY_PASSWORD" in ENTRYPOINT and "'root'@'%%'" in ENTRYPOINT
    assert "--initialize-insecure" in ENTRYPOINT and "mariadb-install-db" in ENTRYPOINT
    assert "--user=mysql" in ENTRYPOINT  # started as root, the server steps down itself


def test_root_filesystem_is_root_owned_except_the_mysql_dirs_and_has_no_setuid(tmp_path):
    fs = RootFs(tmp_path / "root")
    fs.root.mkdir()
    fs.directory("/var/lib/mysql", 0o750, mysql=True)
    fs.write("/usr/local/bin/docker-entrypoint.sh", "#!/bin/sh\n", mode=0o4755)
    fs.write("/var/lib/mysql/x", "")
    fs.tar(tmp_path / "fs.tar")
    with tarfile.open(tmp_path / "fs.tar") as tar:
        owners = {m.name: (m.uid, m.mode & 0o7777) for m in tar.getmembers()}
    assert owners["var/lib/mysql"] == (999, 0o750) and owners["var/lib/mysql/x"][0] == 999
    assert owners["usr/local/bin/docker-entrypoint.sh"] == (0, 0o755)
    assert owners["var"][0] == 0


def test_image_names_are_checked():
    assert [i.image for i in select(())] == [i.image for i in LOCAL_IMAGES]
    assert [i.server_id for i in select(("perfci-local/mysql:8.0.31",))] == ["mysql-8.0.31"]
    with pytest.raises(BadInput, match=r"unknown image 'mysql:8\.0'; known: perfci-local/mysql:8\.0\.31, "):
        select(("mysql:8.0",))
