"""A run's provenance: what every RunSpec of one bench invocation shares."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.backends import backend_label
from core.retrieval.discovery import Retriever
from core.store.commit import git_commit
from core.store.store import RunRecord, RunSpec

if TYPE_CHECKING:
    from core.agents.factory import Agents


@dataclass(frozen=True)
class Setup:
    """Provenance shared by every run of one bench invocation."""

    registry: str
    registry_size: int
    registry_hash: str
    embedding_model: str
    llm_backend: str
    llm_model: str
    discovery_prompt_version: str
    planner_prompt_version: str
    git_commit: str

    @classmethod
    def of(cls, retriever: Retriever, agents: Agents, commit: str | None = None) -> Setup:
        writer = agents.stub_writer
        return cls(retriever.registry.name, len(retriever.registry), retriever.registry.content_hash[:16],
                   retriever.encoder.model_id, writer.backend, writer.model, writer.prompt_version,
                   agents.planner.prompt_version, commit or git_commit())

    @classmethod
    def of_run(cls, run: RunRecord, commit: str | None = None) -> Setup:
        s = run.spec
        return cls(s.registry_name, s.registry_size, s.registry_hash, s.embedding_model, s.llm_backend, s.llm_model,
                   s.discovery_prompt_version, s.planner_prompt_version, commit or git_commit())

    def spec(self, kind: str, arch: str, subset: str, k: int, run_index: int, **extra: Any) -> RunSpec:
        return RunSpec(kind, arch, subset, k, run_index, self.registry, self.registry_size, self.registry_hash,
                       self.embedding_model, self.llm_backend, self.llm_model,
                       backend_label(self.llm_backend, self.llm_model), self.discovery_prompt_version,
                       self.planner_prompt_version, **extra)

