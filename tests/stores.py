"""The stores the store tests run against: SQLite files, and a real PostgreSQL server started for the session.

The server is Debian's PostgreSQL (`initdb`, `pg_ctl`; 15 here, any version under /usr/lib/postgresql/ or
on PATH), made in a fresh temporary directory and listening on 127.0.0.1 on a free port only (its unix
socket stays in that directory). initdb and postgres refuse to run as root, so as root they run as the
`postgres` system user (else `nobody`) through runuser, the directory owned by that user. Connections
need a password (scram-sha-256): the session's random password is in every URL, so the credential tests
can look for it where it must never appear. The server's time zone is not UTC on purpose, so that a
timestamp read back in the session's zone shows up in the tests. fsync is off: these are throwaway data.
`stop` shuts it down at once and removes the directory.
"""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, inspect, text

from core.store.dburl import normalise
from tests.helpers import free_port

STORES = ("sqlite", "postgresql")  # what the store tests run on (conftest's db_url and new_store)
USER = "lab"
SERVER_TIME_ZONE = "Asia/Kolkata"  # UTC+05:30: a time-zone mistake cannot hide behind a whole hour
START_TIMEOUT_S = 60


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why."""


@dataclass(frozen=True)
class PostgresServer:
    """A running throwaway server: `url()` reaches its `postgres` database, `new_database()` a fresh one."""

    root: Path
    bin_dir: Path
    port: int
    password: str
    run_as: tuple[str, ...]

    def url(self, database: str = "postgres", scheme: str = "postgresql+psycopg") -> str:
        return f"{scheme}://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database on this server (each test gets its own)."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        engine = create_engine(normalise(self.url()), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return self.url(name)

    def stop(self) -> None:
        _run([*self.run_as, str(self.bin_dir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate",
              "-w", "stop"], check=False)
        shutil.rmtree(self.root, ignore_errors=True)


def bin_dir() -> Path:
    """Where initdb and pg_ctl are: PG_BIN when set (and only there), else the newest
    /usr/lib/postgresql/<version>/bin, else PATH."""
    if os.environ.get("PG_BIN"):
        candidates = [Path(os.environ["PG_BIN"])]
    else:
        versions = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
        candidates = sorted(versions, key=lambda p: int(p.parent.name), reverse=True)
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(Path(on_path).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise PostgresUnavailable(f"initdb and pg_ctl were not found in {', '.join(map(str, candidates)) or 'PATH'} "
                              "(install Debian's postgresql package, or set PG_BIN)")


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT_S + 10,
                         env={**os.environ, "LC_ALL": "C"})
    if check and out.returncode != 0:
        raise PostgresUnavailable(f"{' '.join(cmd[:6])} ... failed ({out.returncode}): "
                                  f"{(out.stderr or out.stdout).strip()[-600:]}")
    return out


def _unprivileged() -> tuple[tuple[str, ...], pwd.struct_passwd | None]:
    """The command prefix that runs the server's programs, and the user it runs them as (None: ourselves)."""
    if os.geteuid() != 0:
        return (), None
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        if shutil.which("runuser") is None:
            raise PostgresUnavailable("running as root, and runuser (to start PostgreSQL as another user) is missing")
        return ("runuser", "-u", name, "--"), user
    raise PostgresUnavailable("running as root, and neither the postgres nor the nobody user exists to run PostgreSQL")


def start_postgres(attempts: int = 3) -> PostgresServer:
    """initdb a fresh cluster in a temporary directory and start it on a free port of 127.0.0.1."""
    folder = bin_dir()
    run_as, user = _unprivileged()
    root = Path(tempfile.mkdtemp(prefix="tdl-pg-"))
    try:
        password = f"pw-{secrets.token_hex(12)}"
        (root / "pwfile").write_text(password + "\n")
        if user is not None:
            for path in (root, root / "pwfile"):
                os.chown(path, user.pw_uid, user.pw_gid)
        _run([*run_as, str(folder / "initdb"), "-D", str(root / "data"), "-U", USER, f"--pwfile={root / 'pwfile'}",
              "--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"])
        for _ in range(attempts):  # a free port can be taken between the probe and the start
            port = free_port()
            options = (f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root} -c fsync=off "
                       f"-c synchronous_commit=off -c full_page_writes=off -c timezone={SERVER_TIME_ZONE}")
            started = _run([*run_as, str(folder / "pg_ctl"), "-D", str(root / "data"), "-l", str(root / "server.log"),
                            "-w", "-t", str(START_TIMEOUT_S), "-o", options, "start"], check=False)
            if started.returncode == 0:
                return PostgresServer(root, folder, port, password, run_as)
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        raise PostgresUnavailable(f"pg_ctl start failed {attempts} times: {(log or started.stderr).strip()[-600:]}")
    except BaseException:
        _run([*run_as, str(folder / "pg_ctl"), "-D", str(root / "data"), "-m", "immediate", "stop"], check=False)
        shutil.rmtree(root, ignore_errors=True)
        raise


def query(url: str, sql: str, **params: object) -> list[tuple]:
    """Rows of one SQL statement on any store, through SQLAlchemy (the tests' own look at what is stored)."""
    engine = create_engine(normalise(url))
    try:
        with engine.begin() as conn:
            result = conn.execute(text(sql), params)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        engine.dispose()


def tables(url: str) -> set[str]:
    engine = create_engine(normalise(url))
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
