"""`make install PREFIX=...` (issue 18): a new user's way in. The installed
tree has the libraries (shared with its soname, static), the header, a
pkg-config file naming the prefix, taxctl, taxd and the man pages; a program
built with `pkg-config --cflags --libs taxdclient` against the installed
shared library (not the build tree's) runs against a real taxd; the shared
library exports the public API (taxd_*) and nothing else; every man page
renders without a warning."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

MAN_PAGES = sorted((REPO / "man").glob("*.1"))


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """One install per module, into a fresh prefix."""
    root = tmp_path_factory.mktemp("install") / "usr"
    r = subprocess.run(["make", "-s", "install", f"PREFIX={root}"], cwd=REPO,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"make install failed:\n{r.stdout}\n{r.stderr}"
    return root


def test_install_puts_every_part_in_place(prefix):
    expected = ["bin/taxctl", "bin/taxd", "include/taxd/client.h", "lib/libtaxdclient.a",
                "lib/libtaxdclient.so.0.1.0", "lib/libtaxdclient.so.0", "lib/libtaxdclient.so",
                "lib/pkgconfig/taxdclient.pc", "share/man/man1/taxctl.1"]
    expected += [f"share/man/man1/{p.name}" for p in MAN_PAGES]
    missing = [e for e in expected if not (prefix / e).exists()]
    assert not missing, f"not installed: {missing}"
    assert os.readlink(prefix / "lib/libtaxdclient.so.0") == "libtaxdclient.so.0.1.0"
    pc = (prefix / "lib/pkgconfig/taxdclient.pc").read_text()
    assert f"prefix={prefix}\n" in pc, pc


def test_the_shared_library_exports_the_public_api_only(prefix):
    out = subprocess.run(["nm", "-D", "--defined-only", str(prefix / "lib/libtaxdclient.so.0.1.0")],
                         capture_output=True, text=True, check=True).stdout
    # With the version script nm names each symbol name@@TAXDCLIENT_0.
    names = [line.split()[-1].split("@")[0] for line in out.splitlines()
             if line.split()[-2:-1] in (["T"], ["D"], ["B"], ["R"])]
    assert names, out
    assert [n for n in names if not n.startswith("taxd_")] == [], "non-API symbols exported"
    declared = set(re.findall(r"\b(taxd_[a-z_0-9]+)\(", (REPO / "include/taxd/client.h").read_text()))
    functions = {n for n in names}
    assert declared - functions == set(), f"declared but not exported: {declared - functions}"
    soname = subprocess.run(["objdump", "-p", str(prefix / "lib/libtaxdclient.so.0.1.0")],
                            capture_output=True, text=True, check=True).stdout
    assert re.search(r"SONAME\s+libtaxdclient\.so\.0\b", soname), soname


def _build_example(prefix, tmp_path, static=False):
    """The example built with the installed pkg-config file; static links
    libtaxdclient.a in place of -ltaxdclient, with its Requires.private
    (libcurl, jansson, libcrypto) as the shared libraries Debian ships."""
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib/pkgconfig"))
    pc = subprocess.run(["pkg-config", "--cflags", "--libs", "taxdclient"], env=env,
                        capture_output=True, text=True, check=True).stdout.split()
    if static:
        private = subprocess.run(["pkg-config", "--libs", "libcurl", "jansson", "libcrypto"],
                                 capture_output=True, text=True, check=True).stdout.split()
        pc = [a for a in pc if a != "-ltaxdclient"] + [str(prefix / "lib/libtaxdclient.a"),
                                                       *private, "-lpthread"]
    exe = tmp_path / ("upsert-static" if static else "upsert")
    cmd = ["cc", "-std=c17", "-Wall", "-Wextra", "-Werror", str(REPO / "examples/upsert.c"),
           "-o", str(exe), *pc]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stderr}"
    return exe


def _run_example(exe, server, tenant, prefix, stdin):
    env = dict(os.environ, TAXD_URL=server.url, TAXD_CLIENT_ID=tenant.client_id,
               TAXD_CLIENT_SECRET=tenant.client_secret, LD_LIBRARY_PATH=str(prefix / "lib"))
    return subprocess.run([str(exe)], input=stdin, env=env, capture_output=True, text=True, timeout=60)


def test_an_example_built_with_pkg_config_runs_on_the_installed_library(prefix, tmp_path, server):
    tenant = server.new_tenant("install")
    api = server.api()
    owner = api.post("/v1/account-owners", headers=tenant.auth(),
                     json={"id": "o1", "name": "Owner", "account_owner_type": "individual"})
    assert owner.status_code == 201, owner.text
    created = api.post("/v1/accounts", json={"id": "acct-1", "account_owner_id": "o1"},
                       headers=tenant.auth())
    assert created.status_code == 201, created.text
    tx = ('{"id":"tx-1","account_id":"acct-1","datetime":"2025-03-01T00:00:00Z","type":"deposit",'
          '"received":[{"asset_amount":{"amount":"1.5","asset":{"code":"BTC","type":"crypto"}}}]}')
    exe = _build_example(prefix, tmp_path)
    ldd = subprocess.run(["ldd", str(exe)], env=dict(os.environ, LD_LIBRARY_PATH=str(prefix / "lib")),
                         capture_output=True, text=True, check=True).stdout
    assert f"{prefix}/lib/libtaxdclient.so.0" in ldd, ldd
    r = _run_example(exe, server, tenant, prefix, tx + "\n" + tx.replace("acct-1", "nobody") + "\n")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "line 1: created" in r.stdout and "line 2: refused (4" in r.stdout, r.stdout
    assert '"acct-1"' in r.stdout, r.stdout
    assert tenant.client_secret not in r.stdout + r.stderr


def test_the_static_library_links_alone(prefix, tmp_path, server):
    tenant = server.new_tenant("install-static")
    exe = _build_example(prefix, tmp_path, static=True)
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=True).stdout
    assert "libtaxdclient" not in ldd, ldd
    r = _run_example(exe, server, tenant, prefix, "")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("accounts: "), r.stdout


@pytest.mark.parametrize("page", MAN_PAGES, ids=lambda p: p.name)
def test_each_man_page_renders_without_a_warning(page):
    # groff-base is installed by scripts/install-deps: no groff is a failure, not a skip
    assert shutil.which("groff"), "groff missing: run scripts/install-deps"
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = page.read_text()
    for section in (".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH EXIT STATUS", ".SH SEE ALSO"):
        assert section in text, f"{page.name} has no {section}"


def test_every_taxctl_command_has_a_page():
    commands = re.findall(r'\{"([a-z]+)", taxctl_', (REPO / "src/taxctl/main.c").read_text())
    assert commands
    pages = {p.name for p in MAN_PAGES}
    owner = {"list": "get", "patch": "post", "delete": "post"}
    missing = [c for c in commands if f"taxctl-{owner.get(c, c)}.1" not in pages]
    assert not missing, f"no man page for: {missing}"
