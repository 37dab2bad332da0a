"""One Settings object, read from the environment and `.streamlit/secrets.toml`.

Every entry point (CLI, app, tests) builds its configuration here, so a setting has
exactly one name and one default.
"""
from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from core.backends import Backend, backend as backend_named
from core.files import os_error_words, told_unwritable
from core.registries import RegistryDecl, registry_decl

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
ENCODER_RUNTIMES = ("auto", "onnx", "numpy", "torch")
INDEX_KINDS = ("flat", "hnsw", "ivf")  # INDEX: exact (default) or approximate FAISS search, core.retrieval.ann
INDEX_PARAMS = ("HNSW_M", "HNSW_EF_CONSTRUCTION", "HNSW_EF_SEARCH", "IVF_NLIST",
                "IVF_NPROBE")  # defaults: ann.IndexSpec


class DataNotFoundError(RuntimeError):
    """Raised when no ToolBench data directory can be found; the message is user-facing."""


def _read_secrets(root: Path) -> dict[str, str]:
    path = root / ".streamlit" / "secrets.toml"
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {k: str(v) for k, v in raw.items() if isinstance(v, (str, int, float))}


@dataclass(frozen=True)
class Bounds:
    """The values a numeric setting, flag or URL parameter may take: past them a machine aborts, overflows or
    eats its memory (LOCAL_THREADS=1e9 aborted in native code, --runs 1e20 took 3 GB before any output)."""

    low: int | float
    high: int | float
    unit: str  # "a whole number of threads", "a number of seconds", ...
    whole: bool = True
    shown: Bounds | None = None  # the part a page's slider offers, when it offers less (its reason beside it)

    def __post_init__(self) -> None:
        """A shown part inside the range, so that no slider offers what the readers below the page refuse."""
        if self.shown is not None and not self.low <= self.shown.low <= self.shown.high <= self.high:
            raise ValueError(f"shown {self.shown.low:g}..{self.shown.high:g} is not inside {self.low:g}..{self.high:g}")

    def holds(self, value: int | float) -> bool:
        """Whether `value` is in range: for a value already parsed (check_k's int), which parse() would re-read."""
        return self.low <= value <= self.high

    def parse(self, name: str, raw: str) -> int | float:
        """The value of `raw`, or a one-line ValueError naming the setting, its range and what was given."""
        text = raw.strip()
        value: int | float | None
        try:  # a 5,000-digit number is refused by its length, before int() would raise on it
            value = (int(text) if self.whole else float(text)) if len(text) <= 32 else None
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not self.holds(value):
            given = raw if len(raw) <= 40 else raw[:40] + f"… ({len(raw):,} characters)"
            raise ValueError(f"{name} must be {self.unit} from {self.low:g} to {self.high:g}, not {given!r}")
        return value


# Every numeric setting's range, declared once: the environment's (here), the CLI's flags, the pages' sliders and the
# URL's parameters read them, and the library's own checks (check_k).
BOUNDS: dict[str, Bounds] = {
    "LLM_TIMEOUT_S": Bounds(0.1, 3600, "a number of seconds", whole=False),
    "LLM_QUERY_BUDGET_S": Bounds(0.1, 86_400, "a number of seconds", whole=False),
    "LOCAL_THREADS": Bounds(1, 256, "a whole number of threads"),
    "LOCAL_INSTANCES": Bounds(1, 16, "a whole number of model copies"),
    "HNSW_M": Bounds(2, 256, "a whole number"),
    "HNSW_EF_CONSTRUCTION": Bounds(1, 100_000, "a whole number"),
    "HNSW_EF_SEARCH": Bounds(1, 100_000, "a whole number"),
    "IVF_NLIST": Bounds(1, 1_000_000, "a whole number"),
    "IVF_NPROBE": Bounds(1, 1_000_000, "a whole number"),
    # CLI flags (core.cli, core.study.catalog), pages and URL parameters (app.py, app_pages/, ui.inspector_view).
    # k, APIs per search: the study needs 20; 47k hits were 21 MB of JSON and took minutes to score (check_k).
    # shown: the sliders (sidebar, Inspector) offer the studies' k, 1..20 (KSWEEP_KS): the Inspector draws a card
    # per hit and architecture, and a slider of 100 steps could hardly pick among 1..20.
    "k": Bounds(1, 100, "a whole number of APIs", shown=Bounds(1, 20, "a whole number of APIs")),
    "runs": Bounds(1, 100, "a whole number of runs"),
    "concurrency": Bounds(1, 256, "a whole number of calls in flight"),
    "plan_sample": Bounds(0, 100_000, "a whole number of queries per subset"),
    "seeds": Bounds(1, 1_000, "a whole number of seeds"),
    "limit": Bounds(1, 1_000_000, "a whole number of queries"),
    "query_id": Bounds(0, 10**9, "a whole number"),
}


def folder_problem(folder: Path, writable: bool) -> str | None:
    """Why `folder` cannot be used (or made) as a folder, or None: it, or the nearest part of its path that
    exists, is a file; with `writable`, that part cannot be written."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return "is a file, not a folder" if existing == folder else f"cannot be created: {existing} is a file"
    if writable and not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot be written: the folder {existing} is not writable"
    return None


def check_cache_dir(path: Path) -> str | None:
    """CACHE_DIR must be a folder: the ONNX graph, the parsed registry, the decoded index, the assembled models and
    the LLM call cache live there. One that cannot be a folder (a file, a path that cannot be made) is refused in
    one line (it once gave OSError or FileNotFoundError tracebacks from the first cache write). An existing folder
    that cannot be written is not fatal: each cache then works in memory, and the one line returned says so."""
    problem = folder_problem(path, writable=False)
    if problem is None:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problem = f"cannot be created ({exc.strerror or type(exc).__name__})"
    if problem:
        raise ValueError(f"CACHE_DIR {path} {problem}; set CACHE_DIR to a folder this user can write")
    try:
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        told_unwritable(path)
        return (f"CACHE_DIR: {os_error_words(exc, path)}; the caches are kept in memory for this run, so each start "
                f"builds them again")
    return None


def bounded_setting(values: dict[str, str], name: str, default: str) -> int | float:
    """A numeric setting within BOUNDS[name]; else a one-line ValueError naming it, its range and the bad value."""
    return BOUNDS[name].parse(name, values.get(name, default))


@dataclass(frozen=True)
class Settings:
    """Resolved configuration. Secrets are kept out of repr so they never reach a log."""

    toolbench_data: str | None = None
    registry: str = "full"
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    encoder_runtime: str = "auto"
    index: str = "flat"
    index_params: tuple[tuple[str, int], ...] = ()  # the INDEX_PARAMS that are set, as (name, value)
    llm_backend: str = "offline"
    llm_model: str = ""
    llm_timeout_s: float = 60.0
    query_budget_s: float = 180.0  # one query's LLM work, retries and waits included (core.agents.llm.budget)
    openai_base_url: str = ""
    local_model: str = ""
    local_threads: int = 2
    local_instances: int = 2
    gemini_base_url: str = ""
    database_url: str = field(default="", repr=False)  # may hold a password
    cache_dir: Path = PROJECT_ROOT / "data" / "cache"
    index_dir: Path = PROJECT_ROOT / "data" / "index"
    root: Path = PROJECT_ROOT
    gemini_api_key: str = field(default="", repr=False)
    openai_api_key: str = field(default="", repr=False)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, root: Path = PROJECT_ROOT) -> Settings:
        env = dict(os.environ if env is None else env)
        merged = {**_read_secrets(root), **{k: v for k, v in env.items() if v}}
        gemini_key = merged.get("GEMINI_API_KEY") or merged.get("GOOGLE_API_KEY", "")
        openai_url = merged.get("OPENAI_BASE_URL", "")
        backend = merged.get("LLM_BACKEND", "").strip().lower()
        if not backend:
            backend = "gemini" if gemini_key else "offline"
        registry = registry_decl(merged.get("REGISTRY", "full").strip().lower(), root).name
        declared = backend_named(backend)
        runtime = merged.get("ENCODER_RUNTIME", "auto").strip().lower()
        if runtime not in ENCODER_RUNTIMES:
            raise ValueError(f"ENCODER_RUNTIME must be one of {', '.join(ENCODER_RUNTIMES)}, not {runtime!r}")
        index = merged.get("INDEX", "flat").strip().lower()
        if index not in INDEX_KINDS:
            raise ValueError(f"INDEX must be one of {', '.join(INDEX_KINDS)}, not {index!r}")
        local_model = merged.get("LOCAL_MODEL", "")
        default = declared.default_model(merged)
        return cls(
            toolbench_data=merged.get("TOOLBENCH_DATA") or None,
            registry=registry,
            embedding_model=merged.get("EMBEDDING_MODEL", DEFAULT_EMBEDDING_MODEL),
            encoder_runtime=runtime,
            index=index,
            index_params=tuple((name, int(bounded_setting(merged, name, "")))
                               for name in INDEX_PARAMS if name in merged),
            llm_backend=backend,
            llm_model=default if declared.fixed_model else (merged.get("LLM_MODEL", "") or default),
            llm_timeout_s=bounded_setting(merged, "LLM_TIMEOUT_S", "60"),
            query_budget_s=bounded_setting(merged, "LLM_QUERY_BUDGET_S", "180"),
            openai_base_url=openai_url,
            local_model=local_model,
            local_threads=bounded_setting(merged, "LOCAL_THREADS", "2"),
            local_instances=bounded_setting(merged, "LOCAL_INSTANCES", "2"),
            gemini_base_url=merged.get("GEMINI_BASE_URL", ""),
            database_url=merged.get("DATABASE_URL", ""),
            cache_dir=Path(merged.get("CACHE_DIR", str(root / "data" / "cache"))),
            index_dir=Path(merged.get("INDEX_DIR", str(root / "data" / "index"))),
            root=root,
            gemini_api_key=gemini_key,
            openai_api_key=merged.get("OPENAI_API_KEY", ""),
        )

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_backend(self, backend: str) -> Settings:
        """These settings with another backend and that backend's default model (the configured one's kept)."""
        if backend == self.llm_backend:
            return self
        model = backend_named(backend).default_model({"LOCAL_MODEL": self.local_model})
        return replace(self, llm_backend=backend, llm_model=model)

    @property
    def backend(self) -> Backend:
        """The declaration of the configured LLM backend (core.backends)."""
        return backend_named(self.llm_backend)

    @property
    def backend_label(self) -> str:
        return self.backend.label(self.llm_model)

    @property
    def results_url(self) -> str:
        return self.database_url or f"sqlite:///{self.root / 'data' / 'results.sqlite'}"

    @property
    def registry_declared(self) -> RegistryDecl:
        return registry_decl(self.registry, self.root)

    def registry_dir(self) -> Path:
        """The folder of the chosen registry's files: the ToolBench data folder (data_dir) for ToolBench's,
        data/<folder>/ for the others; DataNotFoundError when it is missing."""
        declared = self.registry_declared
        if declared.folder is None:
            return self.data_dir()
        path = self.root / "data" / declared.folder
        if not (path / declared.tools).exists():
            raise DataNotFoundError(f"No {declared.benchmark} registry at {path / declared.tools}; restore it with "
                                    "git checkout data/registries, or rebuild it: python -m core.data.benchmarks.build "
                                    "data/registries")
        return path

    def data_dir(self) -> Path:
        """The ToolBench directory: TOOLBENCH_DATA, then data/toolbench/, then ../shared/toolbench/."""
        candidates: list[Path] = []
        if self.toolbench_data:
            candidates.append(Path(self.toolbench_data).expanduser())
        else:
            candidates += [self.root / "data" / "toolbench", self.root.parent / "shared" / "toolbench"]
        for path in candidates:
            if path.is_dir() and (
                any(path.glob("registry*.jsonl*")) or (path / "toolenv").is_dir() or (path / "tools").is_dir()
            ):
                return path
        tried = ", ".join(str(p) for p in candidates)
        raise DataNotFoundError(
            f"No ToolBench data found (looked in {tried}); set TOOLBENCH_DATA to a directory "
            "holding registry_full.jsonl.gz and queries.jsonl.gz, or an official ToolBench download."
        )

    def secrets(self) -> tuple[str, ...]:
        """Every secret value (the database URL's password too), so redaction can scrub them from any text."""
        return tuple(s for s in (self.gemini_api_key, self.openai_api_key, *url_passwords(self.database_url)) if s)


def url_passwords(url: str) -> tuple[str, ...]:
    """A URL's password as written (percent-encoded) and decoded, for redaction; () when it has none."""
    try:
        raw = urlsplit(url).password
    except ValueError:
        return ()
    return tuple(dict.fromkeys(p for p in (raw, unquote(raw or "")) if p))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """Replace every secret in text with a marker; used on every message that leaves the process."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
