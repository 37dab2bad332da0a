"""The Registry page's import: a team uploads an OpenAPI spec, MCP tool list or JSONL of tools (and a query set),
and it becomes a registry like the shipped ones (core.data.imports: validated, embedded, atomic)."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

import streamlit as st

from core.data import imports
from core.data.query_sets import summary
from core.data.sources import SOURCES, recognise
from core.data.toolbench import DataUnreadable
from core.registries import registry_decl
from core.settings import DataNotFoundError, Settings
from ui.safe import md
from ui.widgets import error

AUTO = "recognise it"
FORMATS = [AUTO, *(s for s in SOURCES if s != "toolbench")]


def _saved(upload: st.runtime.uploaded_file_manager.UploadedFile, folder: Path) -> Path:
    """The upload as a file under `folder`, named like the original (what a reader's messages name)."""
    path = folder / (re.sub(r"[^\w.-]", "_", Path(upload.name).name) or "upload")
    path.write_bytes(upload.getvalue())
    return path


def import_form(settings: Settings) -> None:
    """The upload form; on success the new registry is in the sidebar, with a link to the Inspector on it."""
    st.caption("Upload your own tools: an OpenAPI 3.x or Swagger 2.0 spec (JSON or YAML), MCP `tools/list` results "
               "(one server, or a list of servers) or a JSONL of tools (`tool`, `api`, `description`, `category`?, "
               "`parameters`?), up to 5 MB, and optionally a query set (one JSON object a line: `id`, `query`, "
               "`gold`). It is checked, embedded and stored under data/imported/, whole or not at all.")
    with st.form("reg_import", clear_on_submit=False):
        tools = st.file_uploader("Tools", type=["json", "yaml", "yml", "jsonl", "gz"], key="reg_upload")
        queries = st.file_uploader("Query set (optional)", type=["jsonl"], key="reg_upload_queries")
        cols = st.columns(2)
        name = cols[0].text_input("Name", key="reg_import_name", placeholder="e.g. petstore",
                                  help="1-40 lowercase letters, digits, - or _")
        fmt = cols[1].selectbox("Format", FORMATS, key="reg_import_format")
        submitted = st.form_submit_button("Import", type="primary")
    if not submitted:
        return
    if tools is None or not name.strip():
        st.warning("Choose a file of tools and give the registry a name.")
        return
    with tempfile.TemporaryDirectory(prefix="lab-upload-") as tmp:
        folder = Path(tmp)
        try:
            path = _saved(tools, folder)
            chosen = recognise(path).name if fmt == AUTO else fmt
            staged = imports.stage(settings.root, name.strip(), chosen, path,
                                   _saved(queries, folder) if queries is not None else None)
        except (DataUnreadable, DataNotFoundError, ValueError) as exc:
            error(f"Not imported: {exc}")
            return
        from core.retrieval.assemble import build_retriever  # FAISS: only when an import embeds

        try:
            with st.spinner(f"Embedding {len(staged.registry):,} APIs…"):
                build_retriever(settings, registry=staged.registry)
            imports.commit(staged)
        except Exception as exc:  # whatever failed, nothing was kept
            imports.discard(staged)
            error(f"Not imported (nothing was kept): {exc}", settings)
            return
    manifest = staged.manifest
    st.success(f"Imported **{md(staged.name, 40)}**: {manifest['apis']:,} APIs of {manifest['tools_count']:,} tools "
               f"({chosen}), {manifest['queries_count']:,} queries, {len(manifest['unresolved'])} unresolved gold "
               f"names. Pick it in the sidebar, or open it in the [Inspector](/inspector?registry={staged.name}).")
    if staged.query_set is not None:
        st.code(summary(staged.query_set), language=None)


def registry_facts(settings: Settings) -> str:
    """One line on the chosen registry: its benchmark, format and, for a query set, what its gold names did."""
    declared = registry_decl(settings.registry, settings.root)
    kind = "imported" if declared.imported else "shipped"
    return f"**{md(declared.benchmark, 60)}** · {declared.source} · {kind} · {md(declared.caption, 120)}"
